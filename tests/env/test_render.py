"""``render_mode="rgb_array"`` frames, the schedule recorder behind the Gantt chart, and ``msj-gym
render``."""

from __future__ import annotations

import itertools
import time

import gymnasium as gym
import numpy as np
import pytest

import msj_gym
from msj_gym import PolicyAgent, Simulator
from msj_gym.baselines import make_policy
from msj_gym.cli import main
from msj_gym.env.render import ScheduleRecorder, assign_lanes

pytest.importorskip("PIL")


def test_rgb_array_frames_have_a_fixed_shape_and_follow_the_state() -> None:
    env = gym.make("MSJ-v0", num_arrivals=200, render_mode="rgb_array")
    assert "rgb_array" in env.metadata["render_modes"]
    agent = PolicyAgent("msf", env)
    obs, _ = env.reset(seed=3)
    first = env.render()
    assert first.dtype == np.uint8 and first.ndim == 3 and first.shape[2] == 3
    frames, spent = [first], 0.0
    for _ in range(60):
        obs, _, _, trunc, _ = env.step(agent.predict(obs)[0])
        t0 = time.perf_counter()
        frames.append(env.render())
        spent += time.perf_counter() - t0
        if trunc:
            break
    assert all(f.shape == first.shape and f.dtype == np.uint8 for f in frames)
    assert sum(not np.array_equal(a, b) for a, b in itertools.pairwise(frames)) > 30
    assert spent / 60 < 0.2  # generous: a frame takes a few ms


def test_frames_before_reset_and_for_many_servers_and_preemption() -> None:
    env = gym.make("MSJPreemptive-v0", scenario="kit-fh2", num_arrivals=100, render_mode="rgb_array")
    blank = env.unwrapped.render()  # before reset: an empty system
    assert blank.dtype == np.uint8 and blank.shape[0] % 16 == 0
    agent = PolicyAgent("server-filling", env)
    obs, _ = env.reset(seed=0)
    for _ in range(40):
        obs, *_ = env.step(agent.predict(obs)[0])
        assert env.render().shape == blank.shape


def test_render_modes() -> None:
    with pytest.raises(ValueError, match="render_mode"):
        msj_gym.MSJEnv(render_mode="human")  # gym.make wraps "human" around rgb_array instead
    env = gym.make("MSJ-v0", num_arrivals=50, render_mode="rgb_array_list")
    env.reset(seed=0)
    env.step(0)
    frames = env.render()
    assert isinstance(frames, list) and len(frames) == 2 and frames[0].dtype == np.uint8
    ansi = gym.make("MSJ-v0", render_mode="ansi")
    ansi.reset(seed=0)
    assert "idle" in ansi.render()


def test_record_video(tmp_path) -> None:
    pytest.importorskip("moviepy")
    env = gym.wrappers.RecordVideo(
        gym.make("MSJ-v0", num_arrivals=30, render_mode="rgb_array"), str(tmp_path), disable_logger=True
    )
    agent = PolicyAgent("fcfs", env)
    obs, _ = env.reset(seed=0)
    trunc = False
    while not trunc:
        obs, _, _, trunc, _ = env.step(agent.predict(obs)[0])
    env.close()
    assert list(tmp_path.glob("*.mp4"))


def _recorded(env_id: str, policy: str, seed: int, arrivals: int):
    env = gym.make(env_id, num_arrivals=arrivals, preempt_window=8, disable_env_checker=True)
    agent = PolicyAgent(policy, env)
    rec = ScheduleRecorder()
    obs, info = env.reset(seed=seed)
    rec.after(env)
    trunc = False
    while not trunc:
        action, _ = agent.predict(obs)
        rec.before(env)
        obs, _, _, trunc, info = env.step(action)
        rec.after(env)
    rec.close(info["time"])
    return env.unwrapped.workload, rec.segments


@pytest.mark.parametrize(
    ("env_id", "policy"), [("MSJ-v0", "msf"), ("MSJ-v0", "fcfs"), ("MSJPreemptive-v0", "server-filling")]
)
def test_recorded_schedule_matches_the_native_run(env_id, policy) -> None:
    workload, segments = _recorded(env_id, policy, seed=5, arrivals=300)
    native = Simulator(workload, make_policy(policy), seed=5, num_arrivals=300, warmup=0, record_jobs=True)
    native.run()
    recs = native.records()
    by_job: dict[int, list] = {}
    for seg in segments:
        by_job.setdefault(seg.job_id, []).append(seg)
    for j in range(300):
        segs = sorted(by_job[j], key=lambda s: s.start)
        assert segs[0].start == pytest.approx(recs["first_start"][j], abs=1e-9)
        assert segs[-1].end == pytest.approx(recs["departure_time"][j], abs=1e-9)
        served = sum(s.end - s.start for s in segs)
        assert served == pytest.approx(recs["service_time"][j], rel=1e-9, abs=1e-9)
    # at no time more servers busy than there are: the lanes never overlap
    k = workload.num_servers
    lanes = assign_lanes(segments, k)
    assert all(ln.size == s.need for ln, s in zip(lanes, segments, strict=True))
    events = sorted([(s.start, 1, s.need) for s in segments] + [(s.end, 0, -s.need) for s in segments])
    busy = 0
    for _, _, d in events:
        busy += d
        assert busy <= k


def test_cli_render_gif_and_gantt(tmp_path, capsys) -> None:
    gif, png = tmp_path / "run.gif", tmp_path / "run.png"
    assert (
        main(["render", "--scenario", "sf-fig2", "--policy", "msf", "--arrivals", "40", "--out", str(gif)])
        == 0
    )
    from PIL import Image

    with Image.open(gif) as im:
        assert im.n_frames > 10
    assert "wrote" in capsys.readouterr().out
    argv = ["render", "--scenario", "sf-fig2", "--policy", "server-filling", "--arrivals", "40"]
    assert main([*argv, "--seed", "2", "--out", str(png)]) == 0
    assert png.stat().st_size > 10_000
    # a policy outside the registry, as module:Class (what simulate and leaderboard take too)
    mine = tmp_path / "mine.png"
    argv = ["render", "--scenario", "sf-fig2", "--policy", "msj_gym.baselines.priority:MostServersFirst"]
    assert main([*argv, "--arrivals", "40", "--out", str(mine)]) == 0
    assert mine.stat().st_size > 10_000


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--policy", "bogus", "--out", "x.gif"], "unknown policy 'bogus'"),
        (["--policy", "msf", "--out", "x.mp4"], "--out: expected a file ending in .gif"),
        (["--policy", "msf", "--arrivals", "0", "--out", "x.png"], "--arrivals"),
        (["--policy", "msf", "--load", "-0.5", "--out", "x.png"], "--load"),
        (["--policy", "msf", "--out", "/no/such/dir/x.png"], "does not exist"),
    ],
)
def test_cli_render_bad_input(extra, message, capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["render", "--scenario", "sf-fig2", *extra]) == 2
    assert not list(tmp_path.iterdir())
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_animation_frames_show_the_state_after_each_instants_decisions() -> None:
    from msj_gym.core import state as S
    from msj_gym.env.render import DecisionFrames

    env = gym.make("MSJ-v0", num_arrivals=150, queue_window=64, disable_env_checker=True)
    agent = PolicyAgent("first-fit", env)  # starts every waiting job that fits: none fits afterwards
    frames = DecisionFrames(env)
    seen = []
    draw = frames.renderer.frame

    def spy(sim, episode=None):
        needs = [sim.ji[s, S.NEED] for s in range(sim.ji.shape[0]) if sim.ji[s, S.STATE] == S.WAITING]
        seen.append((float(sim.fv[S.F_NOW]), int(sim.iv[S.I_FREE]), min(needs, default=10**9)))
        return draw(sim, episode)

    frames.renderer.frame = spy
    obs, _ = env.reset(seed=4)
    trunc = False
    while not trunc:
        action, _ = agent.predict(obs)
        frames.before(action)
        obs, _, _, trunc, _ = env.step(action)
        frames.after(trunc)
    times = [t for t, _, _ in seen]
    assert len(seen) > 100 and times == sorted(times) and len(set(times)) == len(times)
    assert all(free < need for _, free, need in seen)

"""Pictures of an MSJ episode: the ``rgb_array`` frames of :class:`~msj_gym.env.msj_env.MSJEnv`, a
schedule recorder, a Gantt chart of the recorded schedule and an animated GIF of frames.

The frames are drawn with Pillow (which matplotlib depends on: ``pip install msj-gym[plot]`` brings
it); a frame takes a few milliseconds. The Gantt chart uses matplotlib.

A frame shows, top to bottom: the clock and the number of jobs; the ``k`` servers as horizontal lanes,
each busy lane in the colour of the class of the job that holds it (a job needing ``n`` servers holds
``n`` lanes, labelled with its id; the dark part of its bar is the share of its service time it has
received, the light part what remains), idle lanes grey; beside them the waiting queue in service order
(one block per job, in its class colour, with its server need written in it; a queue longer than the
panel ends with "+N more"); and a legend of the classes with their waiting and running counts.

The simulator knows how many servers each running job holds, not which: lanes are given to a job when
it is first seen running (the first run of free adjacent lanes that fits, else the lowest free lanes)
and kept until it leaves, so that a job stays put from frame to frame.
"""

from __future__ import annotations

import heapq
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..core import state as S
from ..moldable.model import MoldableSystem
from ..workloads.compat import CompatWorkload
from ..workloads.workload import ClassTable

__all__ = [
    "CompatFrameRenderer",
    "DecisionFrames",
    "FrameRenderer",
    "LaneMap",
    "MoldableFrameRenderer",
    "ScheduleRecorder",
    "Segment",
    "gantt_png",
    "text_summary",
    "write_gif",
]


def text_summary(sim: S.Sim, workload: Any) -> str:
    """``render_mode="ansi"``: the clock, the idle servers and, per class, its need and its waiting and
    running jobs."""
    iv, ci, fv = sim.iv, sim.ci, sim.fv
    lines = [
        f"t={fv[S.F_NOW]:.4f}  idle {iv[S.I_FREE]}/{iv[S.I_K]} servers  "
        f"{iv[S.I_NSYS]} jobs ({iv[S.I_NWAIT]} waiting)"
    ]
    for c, cls in enumerate(workload.classes):
        lines.append(
            f"  {cls.name or f'class{c}':<12} need {ci[S.C_NEED, c]:>5}  "
            f"waiting {ci[S.C_NWAIT, c]:>6}  running {ci[S.C_NRUN, c]:>5}"
        )
    return "\n".join(lines)


# tab10, then the light half of tab20: distinct class colours, cycled past 20 classes
_PALETTE = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (174, 199, 232),
    (255, 187, 120),
    (152, 223, 138),
    (255, 152, 150),
    (197, 176, 213),
    (196, 156, 148),
    (247, 182, 210),
    (199, 199, 199),
    (219, 219, 141),
    (158, 218, 229),
]
_BG = (255, 255, 255)
_IDLE = (232, 232, 232)
_INK = (20, 20, 20)
_GRID = (200, 200, 200)


def class_color(c: int) -> tuple[int, int, int]:
    """The RGB colour of job class ``c`` (the same in frames and Gantt charts)."""
    return _PALETTE[int(c) % len(_PALETTE)]


def _unit_rgb(rgb: tuple[int, int, int]) -> tuple[float, float, float]:
    """``rgb`` on matplotlib's 0..1 scale."""
    return (rgb[0] / 255, rgb[1] / 255, rgb[2] / 255)


def _light(rgb: tuple[int, int, int], f: float = 0.55) -> tuple[int, int, int]:
    return tuple(int(v + (255 - v) * f) for v in rgb)  # type: ignore[return-value]


def _text_color(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    return _INK if 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 150 else (255, 255, 255)


@lru_cache(maxsize=8)
def _font(size: int) -> Any:
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: one bitmap size
        return ImageFont.load_default()


def require_pillow() -> None:
    """Raise an ``ImportError`` naming the fix if Pillow is missing."""
    try:
        import PIL  # noqa: F401
    except ImportError:
        from ..extras import install_hint

        raise ImportError(
            f"render_mode='rgb_array' draws with Pillow: pip install pillow (or {install_hint('plot')})"
        ) from None


def draw_bar(
    d: Any,
    x0: float,
    x1: float,
    top: float,
    bot: float,
    color: tuple[int, int, int],
    frac: float,
    label: str,
) -> None:
    """A block of lanes ``[top, bot]`` over ``[x0, x1]`` in ``color``: dark up to ``frac`` of the width,
    light after, outlined and labelled with ``label`` if it is tall enough to read."""
    xm = x0 + frac * (x1 - x0)
    d.rectangle([x0, top, x1, bot], fill=_light(color))
    d.rectangle([x0, top, xm, bot], fill=color)
    if bot - top >= 11:
        d.rectangle([x0, top, x1, bot], outline=_INK)
        d.text(
            (x0 + 4, (top + bot) / 2),
            label,
            fill=_INK,
            font=_font(11),
            anchor="lm",
            stroke_width=2,
            stroke_fill=_BG,
        )


def lane_runs(lanes: np.ndarray) -> list[np.ndarray]:
    """``lanes`` (sorted) split into runs of adjacent lanes: one rectangle each."""
    breaks = np.flatnonzero(np.diff(lanes) != 1) + 1
    return np.split(lanes, breaks)


def draw_idle_lanes(d: Any, x0: float, x1: float, y0: float, body: float, k: int) -> None:
    """``k`` idle (grey) lanes filling ``[x0, x1] x [y0, y0 + body)``, numbered on the left."""
    lane_h = body / k
    d.rectangle([x0, y0, x1, y0 + body - 1], fill=_IDLE)
    step = max(1, int(np.ceil(12 / lane_h)))  # every lane if there is room, else a few
    f10 = _font(10)
    for lane in range(0, k, step):
        d.text((x0 - 4, y0 + (lane + 0.5) * lane_h), str(lane), fill=_INK, font=f10, anchor="rm")
    d.text((4, y0 + body + 2), "server", fill=_INK, font=f10)


def draw_swatch(d: Any, x: float, y: float, color: tuple[int, int, int]) -> None:
    """A legend's colour square, its text to go at ``(x + 18, y + 8)`` anchored "lm"."""
    d.rectangle([x, y + 2, x + 12, y + 14], fill=color, outline=_INK)


def number_block(color: tuple[int, int, int], text: str, size: int, font_size: int | None = None) -> Any:
    """A ``(size + 1)``-pixel square in ``color`` with ``text`` written in its middle (a PIL image)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (size + 1, size + 1), _BG)
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, size, size], fill=color, outline=_INK)
    if font_size is None:
        font_size = 10 if len(text) < 3 else 8
    d.text(
        (size / 2 + 0.5, size / 2 + 0.5), text, fill=_text_color(color), font=_font(font_size), anchor="mm"
    )
    return img


class LaneMap:
    """Which server lanes each running job holds: stable from one update to the next."""

    def __init__(self, k: int) -> None:
        self.k = int(k)
        self.owner = np.full(self.k, -1, dtype=np.int64)
        self.lanes: dict[int, np.ndarray] = {}

    def clear(self) -> None:
        self.owner[:] = -1
        self.lanes.clear()

    def update(self, jobs: list[tuple[int, int]]) -> dict[int, np.ndarray]:
        """``jobs``: (job id, server need) of the running jobs, the new ones in the order they should be
        placed; returns job id -> its lanes."""
        present = {j for j, _ in jobs}
        for j in [j for j in self.lanes if j not in present]:
            self.owner[self.lanes.pop(j)] = -1
        for j, need in jobs:
            if j not in self.lanes:
                self.lanes[j] = lanes = self._place(int(need))
                self.owner[lanes] = j
        return self.lanes

    def _place(self, need: int) -> np.ndarray:
        free = self.owner < 0
        if need <= 0:
            return np.zeros(0, dtype=np.int64)
        # first run of `need` adjacent free lanes
        run = np.convolve(free.astype(np.int64), np.ones(need, dtype=np.int64), "valid")
        hit = np.flatnonzero(run == need)
        if hit.size:
            return np.arange(hit[0], hit[0] + need)
        idle = np.flatnonzero(free)
        return idle[:need]  # fragmented: the lowest idle lanes (fewer only if the state is inconsistent)


class JobView(NamedTuple):
    job_id: int
    cls: int
    need: int
    received: float  # service received so far
    service: float  # total service time


def running_jobs(sim: Any) -> list[JobView]:
    """The running jobs, oldest start first."""
    iv, ji, jf, js = sim.iv, sim.ji, sim.jf, sim.js
    now = float(sim.fv[S.F_NOW])
    out = []
    for s in sim.run_list[: int(iv[S.I_NRUN])]:
        got = jf[s, S.ATTAINED] + (now - jf[s, S.LAST_START]) * jf[s, S.RATE]
        out.append(
            (
                jf[s, S.LAST_START],
                JobView(int(ji[s, S.JOB_ID]), int(ji[s, S.CLS]), int(ji[s, S.NEED]), got, js[s, S.SERVICE]),
            )
        )
    out.sort(key=lambda p: (p[0], p[1].job_id))
    return [v for _, v in out]


def waiting_jobs(sim: Any, limit: int) -> list[tuple[int, int, int]]:
    """(job id, class, need) of the first ``limit`` waiting jobs in service order."""
    ji = sim.ji
    out: list[tuple[int, int, int]] = []
    s = int(sim.iv[S.I_WHEAD])
    while s >= 0 and len(out) < limit:
        out.append((int(ji[s, S.JOB_ID]), int(ji[s, S.CLS]), int(ji[s, S.NEED])))
        s = int(ji[s, S.WNEXT])
    return out


class _LaneFrames:
    """What the frames with a lane per server share (MSJ-v0's and MSJMoldable-v0's): the layout and
    the background's lanes; a subclass sets ``k``, ``body`` (the lanes' height) and ``height``."""

    WIDTH = 800
    HEADER = 30
    LANE_X0, LANE_X1 = 62, 470  # server lanes
    k: int
    body: float
    height: int

    def _lane_canvas(self, caption: str) -> tuple[Any, Any]:
        """A new background (and its drawing context) with the ``k`` idle lanes, numbered, and
        ``caption`` under their right end."""
        from PIL import Image, ImageDraw

        img = Image.new("RGB", (self.WIDTH, self.height), _BG)
        d = ImageDraw.Draw(img)
        y0 = float(self.HEADER)
        draw_idle_lanes(d, self.LANE_X0, self.LANE_X1, y0, self.body, self.k)
        d.text((self.LANE_X1, y0 + self.body + 2), caption, fill=_INK, font=_font(10), anchor="ra")
        return img, d


class FrameRenderer(_LaneFrames):
    """Draws ``rgb_array`` frames of one workload's states (a fixed size per workload)."""

    QUEUE_X0 = 490
    CELL = 24  # queue block (pixels, with its gap)

    def __init__(self, workload: ClassTable) -> None:
        require_pillow()
        self.k = int(workload.num_servers)
        self.names = [cls.name or f"class{c}" for c, cls in enumerate(workload.classes)]
        self.lanes = LaneMap(self.k)
        self.body = float(min(320, max(160, 24 * self.k)))
        self.lane_h = self.body / self.k
        self.legend_cols = 3
        rows = -(-len(self.names) // self.legend_cols)
        self.legend_y = self.HEADER + self.body + 14
        height = int(self.legend_y + 20 * rows + 8)
        self.height = -(-height // 16) * 16  # video encoders like multiples of 16
        self.episode = None
        self._bg: Any = None
        self._cells: dict[tuple[int, int], Any] = {}

    def frame(self, sim: Any | None, episode: Any = None) -> np.ndarray:
        """The picture of state ``sim`` (None: an empty system at time 0) as an HxWx3 uint8 array."""
        from PIL import ImageDraw

        if episode != self.episode:
            self.lanes.clear()
            self.episode = episode
        img = self._background().copy()
        d = ImageDraw.Draw(img)
        f12, f11, f10 = _font(13), _font(11), _font(10)
        k, lane_h, y0 = self.k, self.lane_h, float(self.HEADER)
        if sim is None:
            now, nsys, nwait, free = 0.0, 0, 0, k
            running: list[JobView] = []
            queue: list[tuple[int, int, int]] = []
            counts = np.zeros((2, len(self.names)), dtype=np.int64)
        else:
            iv = sim.iv
            now, nsys, nwait = float(sim.fv[S.F_NOW]), int(iv[S.I_NSYS]), int(iv[S.I_NWAIT])
            free = int(iv[S.I_FREE])
            running = running_jobs(sim)
            queue = waiting_jobs(sim, self._queue_capacity())
            counts = np.stack([sim.ci[S.C_NWAIT], sim.ci[S.C_NRUN]])
        d.text(
            (8, 8),
            f"t = {now:.3f}     jobs in system: {nsys}  ({nsys - nwait} running, {nwait} waiting)"
            f"     idle servers: {free}/{k}",
            fill=_INK,
            font=f12,
        )
        # server lanes
        x0, x1 = self.LANE_X0, self.LANE_X1
        where = self.lanes.update([(j.job_id, j.need) for j in running])
        for job in running:
            lanes = where[job.job_id]
            if lanes.size == 0:
                continue
            color = class_color(job.cls)
            frac = min(max(job.received / job.service, 0.0), 1.0) if job.service > 0 else 1.0
            for i, run in enumerate(lane_runs(lanes)):
                top = y0 + run[0] * lane_h
                bot = y0 + (run[-1] + 1) * lane_h - (1 if lane_h >= 4 else 0)
                label = f"#{job.job_id}" + (f"  {self.names[job.cls]}" if i == 0 else "")
                draw_bar(d, x0, x1, top, bot, color, frac, label)
        # queue
        qx0 = self.QUEUE_X0
        d.text((qx0 + 44, y0 - 2), f"({nwait} waiting, in service order)", fill=_INK, font=f10)
        cols = (self.WIDTH - 8 - qx0) // self.CELL
        shown = queue
        more = nwait - len(queue)
        if more > 0:  # the last row's end holds the "+N more" note
            shown = queue[: len(queue) - 3]
            more = nwait - len(shown)
        for i, (_jid, c, need) in enumerate(shown):
            r, q = divmod(i, cols)
            img.paste(self._cell(c, need), (qx0 + q * self.CELL, int(y0) + 12 + r * self.CELL))
        if more > 0:
            r, q = divmod(len(shown), cols)
            d.text(
                (qx0 + q * self.CELL + 2, y0 + 12 + r * self.CELL + 10),
                f"+{more} more",
                fill=_INK,
                font=f11,
                anchor="lm",
            )
        # legend
        colw = (self.WIDTH - 16) // self.legend_cols
        for c, name in enumerate(self.names):
            r, q = divmod(c, self.legend_cols)
            lx, ly = 8 + q * colw, self.legend_y + 20 * r
            need_note = "" if sim is None else f" (n={int(sim.ci[S.C_NEED, c])})"
            d.text(
                (lx + 18, ly + 8),
                f"{name}{need_note}: {counts[0, c]} waiting, {counts[1, c]} running",
                fill=_INK,
                font=f11,
                anchor="lm",
            )
        return np.asarray(img, dtype=np.uint8)

    def _background(self) -> Any:
        """What every frame shares: idle lanes, lane numbers, panel titles, legend swatches."""
        if self._bg is None:
            img, d = self._lane_canvas("bar: service received (dark) and to come (light)")
            f10 = _font(10)
            y0 = float(self.HEADER)
            d.text((self.QUEUE_X0, y0 - 2), "queue", fill=_INK, font=_font(11))
            d.text(
                (self.QUEUE_X0, y0 + self.body + 2),
                "block: a waiting job; number: servers it needs",
                fill=_INK,
                font=f10,
            )
            colw = (self.WIDTH - 16) // self.legend_cols
            for c in range(len(self.names)):
                r, q = divmod(c, self.legend_cols)
                draw_swatch(d, 8 + q * colw, self.legend_y + 20 * r, class_color(c))
            self._bg = img
        return self._bg

    def _cell(self, c: int, need: int) -> Any:
        """A queue block of class ``c`` with ``need`` written in it (cached)."""
        key = (c, need)
        cell = self._cells.get(key)
        if cell is None:
            cell = number_block(class_color(c), str(need), self.CELL - 3)
            if len(self._cells) < 4096:
                self._cells[key] = cell
        return cell

    def _queue_capacity(self) -> int:
        cols = (self.WIDTH - 8 - self.QUEUE_X0) // self.CELL
        rows = int((self.body - 12) // self.CELL)
        return max(cols * rows, 4)


def _rounded_height(height: float) -> int:
    return -(-int(height) // 16) * 16  # video encoders like multiples of 16


class MoldableFrameRenderer(_LaneFrames):
    """``rgb_array`` frames of ``MSJMoldable-v0``: the ``n`` servers as lanes (each running job holds as
    many as it was given, in its class colour, labelled with that number), the arriving job waiting for
    the decision, the clock and the admitted and lost counts, and a legend of the running jobs per class.

    The loss simulator keeps its running jobs as (completion time, class, servers) only: a job is known
    by its completion time, to keep its lanes from frame to frame."""

    PANEL_X0 = 490
    BLOCK = 40  # the arriving job's block

    def __init__(self, system: MoldableSystem) -> None:
        require_pillow()
        self.k = int(system.num_servers)
        self.names = [cls.name or f"class{c}" for c, cls in enumerate(system.classes)]
        self.dmax = [int(cls.max_parallelism) for cls in system.classes]
        self.lanes = LaneMap(self.k)
        self.body = float(min(480, max(160, 24 * self.k)))  # taller than MSJ-v0's: n is often 100
        self.lane_h = self.body / self.k
        self.legend_y = self.HEADER + self.body + 18
        self.height = _rounded_height(self.legend_y + 20 * len(self.names) + 8)
        self.episode: Any = None
        self._ids: dict[float, int] = {}  # completion time -> a job number for the lane map
        self._next = 0
        self._bg: Any = None

    def frame(self, core: Any | None, episode: Any = None, deciding: bool = False) -> np.ndarray:
        """The picture of ``core`` (a :class:`~msj_gym.moldable.LossSimulator`; None: an empty system at
        time 0) as an HxWx3 uint8 array; ``deciding``: its pending arrival awaits the agent."""
        from PIL import ImageDraw

        if episode != self.episode:
            self.lanes.clear()
            self._ids.clear()
            self._next = 0
            self.episode = episode
        img = self._background().copy()
        d = ImageDraw.Draw(img)
        now, idle, blocked, accepted, jobs, q, busy = self._state_of(core)
        d.text(
            (8, 8),
            f"t = {now:.3f}     idle servers: {idle}/{self.k}     admitted: {accepted}     "
            f"lost or rejected: {blocked}",
            fill=_INK,
            font=_font(13),
        )
        self._draw_running(d, jobs)
        self._draw_arrival(img, d, core if deciding else None, core is not None, idle)
        self._draw_counts(d, blocked, accepted)
        self._draw_legend(d, q, busy)
        return np.asarray(img, dtype=np.uint8)

    def _state_of(
        self, core: Any | None
    ) -> tuple[float, int, int, int, list[tuple[float, int, int]], np.ndarray, np.ndarray]:
        """What a frame shows of ``core``: the time, idle servers, jobs lost or rejected and admitted,
        the running jobs (completion time, class, servers) in completion order, and the per-class
        counts of running jobs by servers held and of busy servers."""
        from ..moldable.loss import I_NRUN

        if core is None:
            nc = len(self.names)
            q = np.zeros((nc, max(self.dmax) + 1), dtype=np.int64)
            return 0.0, self.k, 0, 0, [], q, np.zeros(nc, dtype=np.int64)
        st = core.state
        blocked, accepted, _ = core.counters()
        nrun = int(st.iv[I_NRUN])
        jobs = sorted(
            zip(
                st.heap_t[:nrun].tolist(),
                st.heap_c[:nrun].tolist(),
                st.heap_k[:nrun].tolist(),
                strict=True,
            )
        )
        return core.now, core.idle, blocked, accepted, jobs, st.q, st.busy

    def _draw_running(self, d: Any, jobs: list[tuple[float, int, int]]) -> None:
        """The running jobs on their lanes: numbered by completion time, new ones placed in
        completion order."""
        ids = {t: self._number(t) for t, _, _ in jobs}
        self._ids = ids  # forget the jobs that left
        where = self.lanes.update([(ids[t], k) for t, _, k in jobs])
        x0, x1, y0, lane_h = self.LANE_X0, self.LANE_X1, float(self.HEADER), self.lane_h
        for t, c, k in jobs:
            for i, run in enumerate(lane_runs(where[ids[t]])):
                top = y0 + run[0] * lane_h
                bot = y0 + (run[-1] + 1) * lane_h - (1 if lane_h >= 4 else 0)
                # the class is in the colour; named too when there are several
                label = f"{k} server{'s' if k > 1 else ''}" + (
                    f"  {self.names[c]}" if i == 0 and len(self.names) > 1 else ""
                )
                draw_bar(d, x0, x1, top, bot, class_color(c), 1.0, label)

    def _draw_arrival(self, img: Any, d: Any, deciding: Any | None, started: bool, idle: int) -> None:
        """The arriving job of ``deciding`` (the core whose pending arrival awaits the agent; None: no
        decision pending, ``started`` telling an episode over from one not reset)."""
        px, py = self.PANEL_X0, float(self.HEADER) + 16
        if deciding is not None:
            c = deciding.pending_class
            top = min(self.dmax[c], idle)
            img.paste(number_block(class_color(c), str(top), self.BLOCK, 16), (px, int(py)))
            lines = [
                f"class {self.names[c]} (at most {self.dmax[c]} servers)",
                f"may get 1..{top} of the {idle} idle servers",
                "or be rejected (action 0)",
            ]
        else:
            lines = ["no decision pending", "(episode over)" if started else "(before reset)"]
        for i, line in enumerate(lines):
            d.text((px + self.BLOCK + 10, py + 6 + 14 * i), line, fill=_INK, font=_font(11), anchor="lm")

    def _draw_counts(self, d: Any, blocked: int, accepted: int) -> None:
        """The decided arrivals, admitted and lost or rejected, below the arriving job."""
        px, cy = self.PANEL_X0, float(self.HEADER) + 16 + self.BLOCK + 24
        arrivals = blocked + accepted
        for i, line in enumerate(
            [
                f"decided arrivals: {arrivals}",
                f"admitted: {accepted}",
                f"lost or rejected: {blocked}" + (f"  ({blocked / arrivals:.1%})" if arrivals else ""),
            ]
        ):
            d.text((px, cy + 16 * i), line, fill=_INK, font=_font(11))

    def _draw_legend(self, d: Any, q: np.ndarray, busy: np.ndarray) -> None:
        """Per class, its running jobs by the number of servers they hold."""
        for c, name in enumerate(self.names):
            ly = self.legend_y + 20 * c
            per = ", ".join(f"{int(q[c, i])}x{i}" for i in range(1, self.dmax[c] + 1) if q[c, i])
            nrun = int(q[c, 1 : self.dmax[c] + 1].sum())
            d.text(
                (8 + 18, ly + 8),
                f"{name} (max {self.dmax[c]} servers): {nrun} running on {int(busy[c])} servers"
                + (f"  (jobs x servers: {per})" if per else ""),
                fill=_INK,
                font=_font(11),
                anchor="lm",
            )

    def _number(self, t: float) -> int:
        """The job number of the job completing at ``t`` (a new one if first seen)."""
        if t not in self._ids:
            self._next += 1
            self._ids[t] = self._next
        return self._ids[t]

    def _background(self) -> Any:
        if self._bg is None:
            img, d = self._lane_canvas("bar: a running job on its servers; number: servers it holds")
            f10 = _font(10)
            y0 = float(self.HEADER)
            d.text(
                (self.PANEL_X0, y0 - 2), "arriving job (no queue: a loss system)", fill=_INK, font=_font(11)
            )
            d.text(
                (self.PANEL_X0, y0 + 16 + self.BLOCK + 4),
                "number: most servers it may get now",
                fill=_INK,
                font=f10,
            )
            for c in range(len(self.names)):
                draw_swatch(d, 8, self.legend_y + 20 * c, class_color(c))
            self._bg = img
        return self._bg


class CompatFrameRenderer:
    """``rgb_array`` frames of ``CompatAssign-v0``: the ``S`` servers as boxes (capacity written in,
    busy ones in the colour of the class of the job they serve, idle grey), the arriving job's pool
    outlined and the servers chosen for it so far marked with a dot, the clock, and the number of jobs in
    the system per class."""

    WIDTH = 800
    HEADER = 30

    def __init__(self, workload: CompatWorkload) -> None:
        require_pillow()
        self.n = int(workload.num_servers)
        self.caps = [float(c) for c in workload.capacities]
        self.classes = list(workload.classes)
        self.names = [cls.name or f"class{c}" for c, cls in enumerate(self.classes)]
        self.cols = min(self.n, 20)
        self.box = min(72, (self.WIDTH - 16) // self.cols)
        rows = -(-self.n // self.cols)
        self.grid_y = self.HEADER + 4
        self.panel_y = self.grid_y + rows * self.box + 10
        self.legend_y = self.panel_y + 40
        self.legend_cols = 3
        self.height = _rounded_height(self.legend_y + 20 * -(-len(self.names) // self.legend_cols) + 8)

    def _xy(self, v: int) -> tuple[int, int]:
        r, q = divmod(v, self.cols)
        return 8 + q * self.box, self.grid_y + r * self.box

    def frame(self, psim: Any | None, job_class: int = -1, chosen: list[int] | None = None) -> np.ndarray:
        """The picture of ``psim`` (a :class:`~msj_gym.pooled.PooledSimulator`; None: an empty system at
        time 0), with the job of class ``job_class`` (-1: none) being given servers, ``chosen`` so far."""
        from PIL import Image, ImageDraw

        img = Image.new("RGB", (self.WIDTH, self.height), _BG)
        d = ImageDraw.Draw(img)
        f13, f11, f10 = _font(13), _font(11), _font(10)
        nc, n = len(self.names), self.n
        chosen = chosen or []
        if psim is None:
            now, nsys = 0.0, 0
            serving = np.full(n, -1, dtype=np.int64)
            per_class = np.zeros(nc, dtype=np.int64)
        else:
            sim = psim.sim
            now, nsys = float(sim.fv[S.F_NOW]), int(sim.iv[S.I_NSYS])
            slots = psim.policy.serving_slots(psim.pdata, n)
            live = sim.ji[:, S.STATE] != S.FREE_SLOT
            serving = np.where(slots >= 0, sim.ji[np.maximum(slots, 0), S.CLS], -1)
            serving[(slots >= 0) & ~live[np.maximum(slots, 0)]] = -1  # left, not yet unlisted
            per_class = np.bincount(sim.ji[live, S.CLS], minlength=nc)[:nc]
        busy = int((serving >= 0).sum())
        d.text(
            (8, 8),
            f"t = {now:.3f}     jobs in system: {nsys}     busy servers: {busy}/{n}",
            fill=_INK,
            font=f13,
        )
        pool = set(self.classes[job_class].servers) if job_class >= 0 else set()
        b = self.box - 4
        fcap = _font(13 if b >= 50 else 10)  # bigger boxes when there are few servers
        for v in range(n):
            x, y = self._xy(v)
            c = int(serving[v])
            color = class_color(c) if c >= 0 else _IDLE
            ink = _text_color(color)
            d.rectangle([x, y, x + b, y + b], fill=color, outline=_INK if v in pool else _GRID)
            if v in pool:  # the arriving job's pool: a thick outline
                d.rectangle([x + 1, y + 1, x + b - 1, y + b - 1], outline=_INK)
            d.text((x + 4, y + 3), str(v), fill=ink, font=_font(9))
            d.text((x + b / 2 + 0.5, y + b * 0.62), f"C={self.caps[v]:g}", fill=ink, font=fcap, anchor="mm")
            if v in chosen:  # chosen for the arriving job: a dot in the corner
                r = max(3, b // 8)
                d.ellipse([x + b - 3 - 2 * r, y + 3, x + b - 3, y + 3 + 2 * r], fill=_INK, outline=_BG)
        # the arriving job
        py = self.panel_y
        if job_class >= 0:
            cls = self.classes[job_class]
            draw_swatch(d, 8, py, class_color(job_class))
            d.text(
                (26, py + 8),
                f"arriving job of class {self.names[job_class]}: choose {cls.choose} of the "
                f"{len(cls.servers)} outlined servers; chosen so far: {sorted(chosen) if chosen else 'none'}",
                fill=_INK,
                font=f11,
                anchor="lm",
            )
        else:
            d.text((8, py + 8), "no job to assign", fill=_INK, font=f11, anchor="lm")
        d.text(
            (8, py + 22),
            "box: a server (index, capacity C), coloured by the class it serves, grey if idle; dot: chosen",
            fill=_INK,
            font=f10,
        )
        colw = (self.WIDTH - 16) // self.legend_cols
        for c, name in enumerate(self.names):
            r, q = divmod(c, self.legend_cols)
            lx, ly = 8 + q * colw, self.legend_y + 20 * r
            draw_swatch(d, lx, ly, class_color(c))
            d.text(
                (lx + 18, ly + 8), f"{name}: {int(per_class[c])} in system", fill=_INK, font=f11, anchor="lm"
            )
        return np.asarray(img, dtype=np.uint8)


def engine_action(env: Any, action: int) -> int | None:
    """The engine action (start slot ``s``, preempt ``-s-1``) that env ``action`` names now (None for
    wait, or if it names nothing)."""
    u = env.unwrapped
    sim = u._sim
    if action <= 0:
        return None
    qwin = u.queue_window
    if action <= u.num_classes * qwin:  # start the r-th waiting job of class c
        c, r = divmod(action - 1, qwin)
        s = int(sim.ci[S.C_HEAD, c])
        for _ in range(r):
            s = int(sim.ji[s, S.CNEXT]) if s >= 0 else -1
        candidates = [s] if s >= 0 else []
    else:
        candidates = [-int(s) - 1 for s in sim.run_list[: int(sim.iv[S.I_NRUN])]]
    for a in candidates:
        try:
            if u.encode(a) == action:
                return a
        except ValueError:
            continue
    return None


class DecisionFrames:
    """The frames of an episode for an animation: one per decision instant, showing the state once the
    scheduler has made all its decisions there (what ``render()`` cannot show: the env asks the agent
    only while a decision is due, so after the last start of an instant it has already moved on).

    Call :meth:`before` with the action just before each ``env.step(action)`` and :meth:`after` just
    after it. The state before the step is copied and the action applied to the copy by the engine."""

    def __init__(self, env: Any, max_frames: int | None = None) -> None:
        from ..core.engine import apply

        self._apply = apply
        self.env = env.unwrapped
        self.renderer = FrameRenderer(self.env.workload)
        # a bound on what is kept in memory (each frame is a full RGB picture); ``full`` says it is reached
        self.max_frames = max_frames
        self.frames: list[np.ndarray] = []
        self.times: list[float] = []
        self.seconds = 0.0  # spent drawing
        self._pre: Any = None
        self._engine: int | None = None
        self._t = -1.0

    def before(self, action: int) -> None:
        sim = self.env._sim
        self._t = float(sim.fv[S.F_NOW])
        self._pre = S.Sim(*(a.copy() for a in sim))
        self._engine = engine_action(self.env, int(action))

    def after(self, truncated: bool) -> None:
        sim = self.env._sim
        if float(sim.fv[S.F_NOW]) != self._t:  # the instant is over: its state after the decisions
            pre = self._pre
            if self._engine is not None:
                self._apply(pre, np.array([self._engine], dtype=np.int64), 1)
            self._draw(pre)
        if truncated:  # and the last state (after the last decision if the episode ended at its instant)
            self._draw(sim)

    @property
    def full(self) -> bool:
        """Whether ``max_frames`` frames are drawn (later ones are not kept)."""
        return self.max_frames is not None and len(self.frames) >= self.max_frames

    def _draw(self, sim: Any) -> None:
        import time

        if self.full:
            return
        t0 = time.perf_counter()
        self.frames.append(self.renderer.frame(sim, 0))
        self.seconds += time.perf_counter() - t0
        self.times.append(float(sim.fv[S.F_NOW]))


class Segment(NamedTuple):
    """A stretch of service: job ``job_id`` (class ``cls``) on ``need`` servers over [start, end)."""

    job_id: int
    cls: int
    need: int
    start: float
    end: float


class ScheduleRecorder:
    """Records the service segments of an episode from outside the compiled step.

    Call :meth:`before` just before each ``env.step`` and :meth:`after` just after (and :meth:`after`
    once after ``reset``). Starts and preemptions happen at the decision instant of a step, so a job seen
    waiting before a step and running (or gone) after it started then; a job that started and left within
    one step departed after its remaining service time; a running job that is waiting again after a step
    was preempted at its instant."""

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self._running: dict[int, tuple[int, int, float, float]] = {}  # id -> cls, need, start, planned end
        self._candidates: list[tuple[int, int, int, int, float]] = []
        self._t0 = 0.0

    def before(self, env: Any) -> None:
        sim = env.unwrapped._sim
        self._t0 = float(sim.fv[S.F_NOW])
        free = int(sim.iv[S.I_FREE])
        ji, js = sim.ji, sim.js
        cands = []
        s = int(sim.iv[S.I_WHEAD])
        while s >= 0:  # waiting jobs that fit now: the ones the step may start
            if ji[s, S.NEED] <= free:
                cands.append(
                    (s, int(ji[s, S.JOB_ID]), int(ji[s, S.CLS]), int(ji[s, S.NEED]), js[s, S.REMAINING])
                )
            s = int(ji[s, S.WNEXT])
        self._candidates = cands

    def after(self, env: Any) -> None:
        sim = env.unwrapped._sim
        ji, jf, js = sim.ji, sim.jf, sim.js
        t0 = self._t0
        now_running = {}
        for s in sim.run_list[: int(sim.iv[S.I_NRUN])]:
            start = float(jf[s, S.LAST_START])
            end = start + js[s, S.REMAINING] / jf[s, S.RATE]
            now_running[int(ji[s, S.JOB_ID])] = (int(ji[s, S.CLS]), int(ji[s, S.NEED]), start, float(end))
        for slot, jid, c, need, remaining in self._candidates:  # started and left within the step
            if jid in now_running or jid in self._running:
                continue
            if ji[slot, S.JOB_ID] == jid and ji[slot, S.STATE] == S.WAITING:
                continue  # still waiting
            self.segments.append(Segment(jid, c, need, t0, t0 + float(remaining)))
        self._candidates = []
        for jid, (c, need, start, end) in self._running.items():
            if jid in now_running and now_running[jid][2] == start:
                continue
            # gone (departed at its planned end) or preempted at the step's instant
            self.segments.append(
                Segment(
                    jid,
                    c,
                    need,
                    start,
                    min(end, t0) if jid in now_running or self._waiting(sim, jid) else end,
                )
            )
        self._running = now_running

    @staticmethod
    def _waiting(sim: Any, jid: int) -> bool:
        ji = sim.ji
        rows = np.flatnonzero((ji[:, S.JOB_ID] == jid) & (ji[:, S.STATE] == S.WAITING))
        return rows.size > 0

    def close(self, now: float) -> None:
        """End the segments of the jobs still running (the episode stopped at ``now``)."""
        for jid, (c, need, start, end) in self._running.items():
            self.segments.append(Segment(jid, c, need, start, min(end, now)))
        self._running = {}


def assign_lanes(segments: list[Segment], k: int) -> list[np.ndarray]:
    """Server lanes for every segment (first fit in time order, ends before starts at ties)."""
    order = sorted(range(len(segments)), key=lambda i: (segments[i].start, segments[i].job_id))
    lanes = LaneMap(k)
    active: list[tuple[float, int]] = []  # (end, segment index)
    out: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * len(segments)
    for i in order:
        seg = segments[i]
        tol = 1e-9 * max(1.0, abs(seg.start))
        while active and active[0][0] <= seg.start + tol:
            _, j = heapq.heappop(active)
            lanes.owner[out[j]] = -1
        if int((lanes.owner < 0).sum()) < seg.need:  # rounding: free the earliest ends
            while active and int((lanes.owner < 0).sum()) < seg.need:
                _, j = heapq.heappop(active)
                lanes.owner[out[j]] = -1
        got = lanes._place(seg.need)
        lanes.owner[got] = i
        out[i] = got
        heapq.heappush(active, (seg.end, i))
    return out


def gantt_png(
    segments: list[Segment], k: int, class_names: list[str], path: str | Path, title: str = ""
) -> Path:
    """Write a Gantt chart of ``segments``: time on x, the ``k`` servers on y, each job's service a bar
    in its class colour over the servers it held (lanes assigned first fit in time order)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch

    lanes = assign_lanes(segments, k)
    polys, colors = [], []
    for seg, ln in zip(segments, lanes, strict=True):
        if ln.size == 0:
            continue
        breaks = np.flatnonzero(np.diff(ln) != 1) + 1
        for run in np.split(ln, breaks):
            lo, hi = run[0], run[-1] + 1
            polys.append([(seg.start, lo), (seg.end, lo), (seg.end, hi), (seg.start, hi)])
            colors.append(np.array(class_color(seg.cls)) / 255)
    t_end = max((s.end for s in segments), default=1.0)
    width = 12 if len(segments) < 400 else 16
    fig, ax = plt.subplots(figsize=(width, min(2.0 + 0.22 * k, 9.0)))
    ax.add_collection(
        PolyCollection(polys, facecolors=colors, edgecolors="k", linewidths=0.3 if len(polys) < 2000 else 0)
    )
    ax.set_xlim(0, t_end)
    ax.set_ylim(k, 0)
    ax.set_xlabel("time")
    ax.set_ylabel("server")
    if k <= 32:
        ax.set_yticks(np.arange(k) + 0.5)
        ax.set_yticklabels([str(i) for i in range(k)], fontsize=7)
    used = sorted({s.cls for s in segments})
    ax.legend(
        handles=[
            Patch(facecolor=_unit_rgb(class_color(c)), edgecolor="k", label=class_names[c]) for c in used
        ],
        loc="upper left",
        bbox_to_anchor=(1.005, 1.0),
        fontsize=8,
        title="class",
        title_fontsize=8,
        frameon=False,
    )
    busy = sum((s.end - s.start) * s.need for s in segments)
    jobs = len({s.job_id for s in segments})
    ax.set_title(
        (title + "\n" if title else "")
        + f"{jobs} jobs served; servers busy {busy / (k * t_end):.0%} of [0, {t_end:.4g}]",
        fontsize=9,
    )
    fig.tight_layout()
    from ..atomic import atomic_savefig

    return atomic_savefig(fig, path, dpi=110)  # whole or not at all


def write_gif(frames: list[np.ndarray], path: str | Path, ms_per_frame: int = 150) -> Path:
    """Write ``frames`` (HxWx3 uint8) as a looping animated GIF."""
    from PIL import Image

    if not frames:
        raise ValueError("write_gif: no frames")
    # one palette for every frame (from a sample of them): smaller files, no colour flicker
    step = max(1, len(frames) // 16)
    sample = Image.fromarray(np.concatenate(frames[::step][:16], axis=0))
    palette = sample.quantize(colors=255)
    images = [Image.fromarray(f).quantize(palette=palette, dither=Image.Dither.NONE) for f in frames]
    from ..atomic import atomic_path

    with atomic_path(path) as tmp:  # a full disk leaves no truncated GIF
        images[0].save(
            tmp, save_all=True, append_images=images[1:], duration=ms_per_frame, loop=0, optimize=False
        )
    return Path(path)

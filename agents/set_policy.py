"""A policy network over the class set (``observation="classes"``), equivariant in the classes, as
stable-baselines3 policies: :class:`ClassSetMaskablePolicy` for sb3-contrib's MaskablePPO and
:class:`ClassSetPolicy` for PPO. A checkpoint saves and loads like any SB3 model.

The shape is the one of DeepSets (Zaheer et al., NeurIPS 2017) and of Decima's per-node scores (Mao et
al., SIGCOMM 2019): one encoder shared by every class row (the row with the system's features), a
self-attention layer between the real classes (optional), a context pooled over them (masked mean and
max: symmetric), and a score per class from the class's embedding and the context. "Wait" (and the
advisor's action, where the env has one) is scored from the context alone, and the value too. So:

* permuting the class rows permutes the class scores and changes nothing else (tested);
* a padding row (column 0 of the row is 0) gets a score of ``-1e9`` and never any probability, masks
  or not (tested);
* the action layout is the env's: ``0`` wait, ``1 + c`` class ``c`` (priority actions, or job actions
  with ``queue_window=1``: "start the oldest job of class c"), then the advisors' actions if any.

The network reads the layout from the spaces: ``max_classes`` from the action space (one action per
class slot plus wait, plus the advisor's), the features per class from the observation's length.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from msj_gym.env.layout import (
    SET_AGE,
    SET_QUEUE,
    SET_SYSTEM_FEATURES,
    STATIC_CLASS,
    STATIC_SYSTEM,
    class_features,
)

if TYPE_CHECKING:
    from msj_gym.agents.system_model import SimulatedSelector

__all__ = [
    "ClassSetMaskablePolicy",
    "ClassSetNetwork",
    "ClassSetPolicy",
    "fit_head",
    "set_layout",
]

PADDING_SCORE = -1e9


def set_layout(observation_space: spaces.Space, action_space: spaces.Space) -> tuple[int, int, int]:
    """``(class slots, features per class row, extra actions after the classes)`` of a class-set env:
    ``8 + slots * features`` observation entries (14 or 17 features per row) and ``n = 1 + slots +
    extra`` actions (the extra ones: the advisors' decisions)."""
    if not isinstance(action_space, spaces.Discrete) or not isinstance(observation_space, spaces.Box):
        raise ValueError("the class-set policy needs a Discrete action space and a Box observation")
    rows = observation_space.shape[0] - SET_SYSTEM_FEATURES
    for features in (class_features(False), class_features(True)):
        slots, left = divmod(rows, features)
        extra = int(action_space.n) - 1 - slots
        if slots > 0 and left == 0 and extra >= 0:
            return slots, features, extra
    raise ValueError(
        f"observation of {observation_space.shape[0]} entries and {action_space.n} actions: not the "
        "class-set layout (make the env with observation='classes' and priority actions, or job "
        "actions with queue_window=1)"
    )


def _mlp(sizes: list[int], activation: type[nn.Module]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in itertools.pairwise(sizes):
        layers += [nn.Linear(a, b), activation()]
    return nn.Sequential(*layers)


class ClassSetNetwork(nn.Module):
    """The SB3 "mlp extractor" of the class-set policies: ``forward`` returns the action logits
    (``latent_dim_pi`` = the number of actions) and the value's latent features."""

    # the buffers registered in __init__ (nn.Module's attribute lookup gives a type checker no more
    # than "a tensor or a module")
    follow_bias: th.Tensor
    select_bias: th.Tensor
    follow_when_age: th.Tensor
    follow_when_queue: th.Tensor
    gate_bias: th.Tensor

    def __init__(
        self,
        slots: int,
        features: int,
        extra: int,
        hidden: int = 64,
        attention_layers: int = 1,
        heads: int = 4,
        activation: type[nn.Module] = nn.ReLU,
        gate: bool = False,
        simulated_selection: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.slots, self.features, self.extra = slots, features, extra
        # the advisors the network scores and pairs with (the bases); a simulated selector's fallbacks
        # are the env's last advisors, only ever followed throughout
        fallbacks = len((simulated_selection or {}).get("fallbacks", ()))
        if fallbacks and fallbacks >= extra:
            raise ValueError(
                f"simulated_selection: {fallbacks} fallbacks need more advisors than that in the env "
                f"(at least one base), got {extra}"
            )
        self.paired = extra - fallbacks
        self.latent_dim_pi = 1 + slots + extra
        self.latent_dim_vf = hidden
        # the layers are made in a fixed order: a seed gives the same initial weights
        self._make_set_layers(features, hidden, attention_layers, heads, activation)
        self._make_static_heads(hidden, activation, gate)
        self._register_following()
        # the advisor to follow chosen by simulating each on the observed system instead of by the
        # selector head, where the observation determines the system (see agents.system_model)
        self.simulated: SimulatedSelector | None = None
        # the advisor per row of a rehearsal's batch (see _rehearse), None otherwise, and the one its
        # guards hand decisions to (None: the same)
        self._forced: th.Tensor | None = None
        self._forced_rescue: int | None = None
        if simulated_selection is not None and extra:
            from msj_gym.agents.system_model import SimulatedSelector

            self.simulated = SimulatedSelector(**simulated_selection)
            if len(self.simulated.bases) != self.paired:
                raise ValueError(
                    f"simulated_selection: expected {self.paired} bases (the env's advisors before the "
                    f"{fallbacks} fallbacks), got {len(self.simulated.bases)}"
                )

    def _make_set_layers(
        self, features: int, hidden: int, attention_layers: int, heads: int, activation: type[nn.Module]
    ) -> None:
        """The per-class encoder, the attention between classes, the context, the per-class score, the
        scores of waiting and of the advisors, and the value's features."""
        self.encoder = _mlp([SET_SYSTEM_FEATURES + features, hidden, hidden], activation)
        self.attention = nn.ModuleList(
            nn.MultiheadAttention(hidden, heads, batch_first=True) for _ in range(attention_layers)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(attention_layers))
        self.context = _mlp([SET_SYSTEM_FEATURES + 2 * hidden, hidden, hidden], activation)
        self.score = nn.Sequential(_mlp([2 * hidden, hidden], activation), nn.Linear(hidden, 1))
        self.other = nn.Sequential(_mlp([hidden, hidden], activation), nn.Linear(hidden, 1 + self.paired))
        self.value = _mlp([hidden, hidden], activation)
        for head in (self.score[-1], self.other[-1]):  # near-uniform initial policy
            assert isinstance(head, nn.Linear)
            nn.init.orthogonal_(head.weight, gain=0.01)
            nn.init.zeros_(head.bias)

    def _make_static_heads(self, hidden: int, activation: type[nn.Module], gate: bool) -> None:
        """The selector and, with ``gate``, the gate."""
        # With advisors: which one to follow, from what does not change within an episode (the
        # system and its classes), so that the agent follows one heuristic throughout; trained apart
        # (fit_head), and ``follow_bias`` added to the followed advisor's logit (0: none).
        width = len(STATIC_SYSTEM) + len(STATIC_CLASS)
        if self.paired:
            self.select_encoder = _mlp([width, hidden, hidden], activation)
            self.select = nn.Sequential(_mlp([len(STATIC_SYSTEM) + 2 * hidden, hidden], activation))
            self.select.append(nn.Linear(hidden, self.paired))
        # The gate (with advisors, optional): whether on this system the network's own choices are
        # worth more than following the selected advisor throughout, from the same static features
        # as the selector; trained apart (fit_head) on what each did on generated systems.
        self.gated = bool(gate and self.paired)
        if self.gated:
            self.gate_encoder = _mlp([width, hidden, hidden], activation)
            self.gate = nn.Sequential(_mlp([len(STATIC_SYSTEM) + 2 * hidden, hidden], activation))
            self.gate.append(nn.Linear(hidden, 2))
            # added to the gate's logits (network, follow): a lean towards following, where trusting
            # the network wrongly is costly (chosen by cross-validation)
            self.register_buffer("gate_bias", th.zeros(2))

    def _register_following(self) -> None:
        """The buffers that set how the selected advisor is followed (tuned after the fit)."""
        self.register_buffer("follow_bias", th.zeros(()))
        # added to the selector's logits: a lean towards the advisor that is rarely far off, where a
        # wrong pick is costly (chosen by cross-validation; see msj_gym.agents.generalist)
        self.register_buffer("select_bias", th.zeros(max(self.paired, 1)))
        # the starvation guard: where some class's oldest waiting job is older than this (in the
        # observation's squashed units of its class's mean duration), the selected advisor is followed
        # whatever else scores higher (2: above any squashed value, never)
        self.register_buffer("follow_when_age", th.full((), 2.0))
        # the queue guard: where the waiting jobs' server needs add up to more than this (the
        # observation's squashed units of k), the selected advisor is followed until the queue is
        # back under it; a network that lets a queue grow hands it to a heuristic that drains it
        self.register_buffer("follow_when_queue", th.full((), 2.0))

    def _embed(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """Per-class embeddings ``(B, M, h)``, the context ``(B, h)`` and the mask of real classes."""
        system = obs[:, :SET_SYSTEM_FEATURES]
        rows = obs[:, SET_SYSTEM_FEATURES:].reshape(obs.shape[0], self.slots, self.features)
        present = rows[:, :, 0] > 0.5
        # only the slots up to the last real class of the batch (the rest is padding everywhere): a
        # system with few classes costs little, and no result changes (padding is masked below)
        used = int(th.nonzero(present.any(dim=0)).max()) + 1 if bool(present.any()) else 1
        rows, present = rows[:, :used], present[:, :used]
        x = th.cat([rows, system.unsqueeze(1).expand(-1, used, -1)], dim=2)
        emb = self.encoder(x)
        for attend, norm in zip(self.attention, self.norms, strict=True):
            out, _ = attend(emb, emb, emb, key_padding_mask=~present, need_weights=False)
            emb = norm(emb + out)
        weight = present.unsqueeze(2).to(emb.dtype)
        count = weight.sum(dim=1).clamp(min=1.0)
        mean = (emb * weight).sum(dim=1) / count
        peak = emb.masked_fill(~present.unsqueeze(2), -1e9).amax(dim=1)
        peak = th.where(present.any(dim=1, keepdim=True), peak, th.zeros_like(peak))
        context = self.context(th.cat([system, mean, peak], dim=1))
        return emb, context, present

    def _load_from_state_dict(self, state: dict[str, Any], prefix: str, *args: Any) -> None:
        # checkpoints saved before the guard existed: it stays off
        state.setdefault(prefix + "follow_when_age", th.full((), 2.0))
        state.setdefault(prefix + "follow_when_queue", th.full((), 2.0))
        super()._load_from_state_dict(state, prefix, *args)

    def _static(self, encoder: nn.Module, head: nn.Module, obs: th.Tensor) -> th.Tensor:
        """``head`` over the classes' static rows pooled through ``encoder`` (the columns that describe
        the system, not its state: the same at every decision of an episode)."""
        system = obs[:, :SET_SYSTEM_FEATURES][:, list(STATIC_SYSTEM)]
        rows = obs[:, SET_SYSTEM_FEATURES:].reshape(obs.shape[0], self.slots, self.features)
        present = rows[:, :, 0] > 0.5
        x = th.cat([rows[:, :, list(STATIC_CLASS)], system.unsqueeze(1).expand(-1, self.slots, -1)], dim=2)
        emb = encoder(x)
        weight = present.unsqueeze(2).to(emb.dtype)
        mean = (emb * weight).sum(dim=1) / weight.sum(dim=1).clamp(min=1.0)
        peak = emb.masked_fill(~present.unsqueeze(2), -1e9).amax(dim=1)
        out: th.Tensor = head(th.cat([system, mean, peak], dim=1))
        return out

    def selector_logits(self, obs: th.Tensor) -> th.Tensor:
        """Per advisor, how good following it throughout is on this system."""
        return self._static(self.select_encoder, self.select, obs) + self.select_bias[: self.paired]

    def selected(self, obs: th.Tensor) -> th.Tensor:
        """``(B, 1)``: the advisor followed on each observation's system: the simulated pick where
        there is a simulated selector and the observation determines the system, else the selector
        head's."""
        return self.plan(obs)[0]

    def plan(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """``(B, 1)`` each: the advisor followed on each observation's system (as :meth:`selected`),
        whether the network is trusted there as the rehearsal settled it (0 trusted, 1 the
        advisor followed throughout, -1 not settled: the gate head decides, if there is one), and the
        advisor its guards hand decisions to where it is trusted (its base, or with a selector's
        ``rescue="alone"`` the heuristic simulated best alone there). A fallback (an advisor past the
        bases) is always followed throughout."""
        if self._forced is not None:  # a rehearsal's run: its base, the network trusted
            forced = self._forced.unsqueeze(1)
            rescue = forced if self._forced_rescue is None else th.full_like(forced, self._forced_rescue)
            return forced, th.zeros_like(forced), rescue
        if self.simulated is None:
            chosen = self.selector_logits(obs).argmax(dim=1, keepdim=True)
            return chosen, th.full_like(chosen, -1), chosen
        rehearsal = self._rehearse if self.simulated.rehearse else None
        batch = obs.detach().cpu().numpy()
        picks, settled, alone = self.simulated.plan(batch, self.features, rehearsal, self.digest)
        chosen = th.as_tensor(picks, device=obs.device).unsqueeze(1)
        modes = th.as_tensor(settled, device=obs.device).unsqueeze(1)
        if bool((chosen < 0).any()):  # systems the observation does not determine: the head's pick
            head = self.selector_logits(obs).argmax(dim=1, keepdim=True)
            chosen = th.where(chosen >= 0, chosen, head)
        rescue = chosen
        if self.simulated.rescue == "alone":
            best = th.as_tensor(alone, device=obs.device).unsqueeze(1)
            rescue = th.where(best >= 0, best, chosen)
        return chosen, modes, rescue

    def digest(self) -> str:
        """A hash of the network's weights and buffers (what its rehearsals depend on besides the
        code): keys its rehearsed plans on disk."""
        h = hashlib.sha256()
        for name, value in sorted(self.state_dict().items()):
            h.update(name.encode() + value.detach().cpu().numpy().tobytes())
        return h.hexdigest()[:32]

    @th.no_grad()
    def _rehearse(self, workload: Any, pick: int) -> tuple[np.ndarray, float]:
        """The agent on a rebuilt system (:class:`~msj_gym.agents.system_model.SimulatedSelector`'s
        rehearsal): the network's mean response time following each base (its guards as they are,
        handing decisions to the base or, with ``rescue="alone"``, to ``pick``; the gate and the
        selection set aside), and ``pick`` (a base or a fallback) followed
        throughout, on the selector's seeds (the same jobs for each). Every run steps together, one
        batch per step."""
        import gymnasium as gym

        import msj_gym  # noqa: F401  (registers the envs)
        from msj_gym.agents.system_model import play_together

        sel = self.simulated
        assert sel is not None and sel.env_kwargs is not None  # a rehearsing selector has both
        runs = [(b, s) for b in range(self.paired) for s in sel.seeds]
        advisors, env_kwargs = list(sel.followable), sel.env_kwargs

        # each run's env asks only the advisors it may follow (every advisor is asked at every
        # decision, and the others change nothing: the advisors only advise)
        def make(followed: list[str]) -> Any:
            kwargs = {**env_kwargs, "advisor": followed}
            return gym.make(sel.env_id, scenario=workload, num_arrivals=sel.rehearse, **kwargs)

        device = self.follow_bias.device
        # the advisors of the network's runs: the bases, and the pick where the guards hand it over
        rescued = sel.rescue == "alone"
        width = max(self.paired, pick + 1) if rescued else self.paired
        paired = 1 + self.slots + width  # the actions of an env with those advisors

        def network(live: list[int], obs: np.ndarray, masks: np.ndarray) -> list[int]:
            self._forced = th.tensor([runs[j][0] for j in live], device=device)
            logits = self.forward_actor(th.as_tensor(obs, dtype=th.float32, device=device))[:, :paired]
            allowed = th.as_tensor(masks, device=device)
            out: list[int] = logits.masked_fill(~allowed, -math.inf).argmax(dim=1).tolist()
            return out

        self._forced_rescue = pick if rescued else None
        try:
            envs = [make(advisors[:width]) for _ in runs]
            means = play_together(envs, [s for _, s in runs], network, flagged=False)
        finally:
            self._forced = self._forced_rescue = None
        follow_action = 1 + self.slots  # the picked advisor's own decision, always offered
        follow = play_together(
            [make([advisors[pick]]) for _ in sel.seeds],
            sel.seeds,
            lambda live, o, m: [follow_action] * len(live),
            flagged=False,
        )
        return means.reshape(self.paired, len(sel.seeds)).mean(axis=1), float(follow.mean())

    def gate_logits(self, obs: th.Tensor) -> th.Tensor:
        """``(B, 2)``: how good the network's own choices (column 0) and following the selected
        advisor throughout (column 1) are on this system (a gated network only)."""
        return self._static(self.gate_encoder, self.gate, obs) + self.gate_bias

    def forward_actor(self, obs: th.Tensor) -> th.Tensor:
        emb, context, present = self._embed(obs)
        return self._logits(obs, emb, context, present)

    def _logits(self, obs: th.Tensor, emb: th.Tensor, context: th.Tensor, present: th.Tensor) -> th.Tensor:
        pair = th.cat([emb, context.unsqueeze(1).expand_as(emb)], dim=2)
        scores = self.score(pair).squeeze(2).masked_fill(~present, PADDING_SCORE)
        rest = scores.new_full((scores.shape[0], self.slots - scores.shape[1]), PADDING_SCORE)
        other = self.other(context)
        advisors = other[:, 1:]
        if self.extra > self.paired:  # a fallback has no score of the network's own: it is only followed
            advisors = th.cat([advisors, other.new_zeros((other.shape[0], self.extra - self.paired))], dim=1)
        if self.extra:  # only the selected advisor may be followed
            with th.no_grad():
                chosen, settled, rescue = self.plan(obs)
                rows = obs[:, SET_SYSTEM_FEATURES:].reshape(obs.shape[0], self.slots, self.features)
                oldest = rows[:, :, SET_AGE].amax(dim=1, keepdim=True)
                follow = (oldest > self.follow_when_age) | (
                    obs[:, SET_QUEUE : SET_QUEUE + 1] > self.follow_when_queue
                )
                # a guard that fires where the network is trusted hands the decision to its rescue
                chosen = th.where(follow & (settled == 0), rescue, chosen)
                # a system the rehearsal or the gate does not trust the network on, or whose pick is a
                # fallback (the selector settles those as followed): follow throughout
                follow = follow | (settled == 1)
                if self.gated and bool((settled < 0).any()):  # the gate decides what nothing settled
                    gate = self.gate_logits(obs).argmax(dim=1, keepdim=True) == 1
                    follow = follow | ((settled < 0) & gate)
                guard = th.where(follow, 1e6, 0.0)
            followed = th.zeros_like(advisors, dtype=th.bool).scatter_(1, chosen, True)
            advisors = (advisors + self.follow_bias + guard).masked_fill(~followed, PADDING_SCORE)
        return th.cat([other[:, :1], scores, rest, advisors], dim=1)

    def forward_critic(self, obs: th.Tensor) -> th.Tensor:
        _, context, _ = self._embed(obs)
        return self.value(context)

    def forward(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        emb, context, present = self._embed(obs)
        return self._logits(obs, emb, context, present), self.value(context)


if TYPE_CHECKING:
    # what the mixin is mixed into, for the type checker; at run time it is a plain class, so that
    # it goes first in the bases of both policies (MaskableActorCriticPolicy is an optional import)
    _MixinBase = ActorCriticPolicy
else:
    _MixinBase = object


class _ClassSetMixin(_MixinBase):
    """What both SB3 policy classes share: the class-set network as the "mlp extractor", fed the
    observation itself, with its logits used as they are (no linear action layer on top)."""

    def _build_mlp_extractor(self) -> None:
        slots, features, extra = set_layout(self.observation_space, self.action_space)
        kwargs = dict(getattr(self, "set_kwargs", {}))
        # not an SB3 MlpExtractor, but it has all SB3 uses of one: forward, forward_actor,
        # forward_critic, latent_dim_pi and latent_dim_vf
        self.mlp_extractor = ClassSetNetwork(slots, features, extra, **kwargs)  # type: ignore[assignment]

    def set_training_mode(self, mode: bool) -> None:
        # SB3 sets the mode at every predict call, and torch's train() walks every submodule: about a
        # fifth of an agent's run at one decision per call. Where the policy and its network are in
        # that mode already, there is nothing to set.
        if self.training == mode and self.mlp_extractor.training == mode:
            return
        super().set_training_mode(mode)

    def _build(self, lr_schedule: Any) -> None:
        ortho = self.ortho_init
        self.ortho_init = False  # the network initialises itself (small score heads)
        super()._build(lr_schedule)
        self.ortho_init = ortho
        self.action_net = nn.Identity()
        # the optimizer again, without the linear action layer just replaced (as SB3 makes it: its
        # optimizer classes take ``lr``, which torch's base Optimizer does not declare)
        self.optimizer = self.optimizer_class(  # type: ignore[call-arg]
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )


def _split_kwargs(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    names = ("hidden", "attention_layers", "heads", "gate", "simulated_selection")
    mine = {k: kwargs.pop(k) for k in names if k in kwargs}
    return mine, kwargs


class ClassSetPolicy(_ClassSetMixin, ActorCriticPolicy):
    """PPO's actor-critic over the class set (see the module docstring). Keywords ``hidden`` (64),
    ``attention_layers`` (1), ``heads`` (4), ``gate`` (False: with advisors, a head that may
    have the network follow its selected advisor throughout on a system) and ``simulated_selection``
    (None: the selector head picks the advisor followed; else the keywords of a
    :class:`~msj_gym.agents.system_model.SimulatedSelector`, which picks it by simulating each advisor
    on the system the observation describes) shape the network; the rest go to SB3."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.set_kwargs, kwargs = _split_kwargs(kwargs)
        super().__init__(*args, **kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), **self.set_kwargs}


def _maskable_base() -> type:
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    return MaskableActorCriticPolicy


class ClassSetMaskablePolicy(_ClassSetMixin, _maskable_base()):  # type: ignore[misc]
    """MaskablePPO's actor-critic over the class set (see the module docstring); keywords as
    :class:`ClassSetPolicy`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.set_kwargs, kwargs = _split_kwargs(kwargs)
        super().__init__(*args, **kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), **self.set_kwargs}


def class_logits(policy: Any, obs: np.ndarray) -> np.ndarray:
    """The policy's action logits for a batch of observations (before masking)."""
    with th.no_grad():
        x = th.as_tensor(np.asarray(obs, dtype=np.float32), device=policy.device)
        return policy.mlp_extractor.forward_actor(policy.extract_features(x)).cpu().numpy()


def _fit_static(
    logits: Any,
    params: list[nn.Parameter],
    obs: np.ndarray,
    excess: np.ndarray,
    epochs: int,
    lr: float,
    seed: int,
    temperature: float,
) -> float:
    """Fit a static head (``logits`` of a batch of observations, over ``params``) by cross-entropy to
    the softmin of ``excess`` at ``temperature`` (cost-sensitive classification: near-ties share the
    target, and its argmax aims at the least excess). Returns the mean excess of the argmax choices
    on the fitting systems."""
    gen = th.Generator().manual_seed(seed)
    x = th.as_tensor(np.asarray(obs, dtype=np.float32))
    cost = th.as_tensor(np.asarray(excess, dtype=np.float32))
    optimizer = th.optim.Adam(params, lr=lr)
    n = len(x)
    # the target puts its weight on the choices within a few per cent of the best (a softmin of the
    # excess): cross-entropy to it keeps its gradient where the expected excess, a softmax saturated
    # early on the choice that is never far off, had none
    target = th.softmax(-cost / temperature, dim=1)
    for _ in range(epochs):
        for idx in th.randperm(n, generator=gen).split(64):
            logp = th.log_softmax(logits(x[idx]), dim=1)
            loss = -(target[idx] * logp).sum(dim=1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with th.no_grad():
        chosen = logits(x).argmax(dim=1)
    return float(cost[th.arange(n), chosen].mean())


#: A static head of a class-set network: its logits' method, and the modules it trains.
_HEADS = {
    "selector": ("selector_logits", ("select_encoder", "select")),
    "gate": ("gate_logits", ("gate_encoder", "gate")),
}


def fit_head(
    policy: Any,
    head: str,
    obs: np.ndarray,
    excess: np.ndarray,
    *,
    epochs: int = 300,
    lr: float = 3e-3,
    seed: int = 0,
    temperature: float = 0.05,
) -> float:
    """Train a static head of ``policy``, a class-set policy; ``obs`` holds one observation per system
    (only its static columns are read). Returns the mean excess of the head's choices on the training
    systems.

    ``head="selector"``: the advisor selector (a policy with advisors); ``excess[i, j]`` is how much
    worse following advisor ``j`` throughout is on system ``i`` than the best advisor there (``T_j /
    T_best - 1``, capped; an unstable advisor at the cap). ``head="gate"`` (a policy made with
    ``gate=True``): ``excess[i]`` is how much worse, on system ``i``, the network's own choices
    (column 0) and following the selected advisor throughout (column 1) are than the better of the
    two."""
    if head not in _HEADS:
        raise ValueError(f"head: expected one of {sorted(_HEADS)}, got {head!r}")
    net = policy.mlp_extractor
    logits, modules = _HEADS[head]
    params = [p for m in modules for p in getattr(net, m).parameters()]
    return _fit_static(getattr(net, logits), params, obs, excess, epochs, lr, seed, temperature)

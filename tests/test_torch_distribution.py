"""The plain-PyTorch masked distributions (revolution_env.interop.torch): samples keep to the env's masks, the log
probability is the masked softmax's, and they agree with sb3-contrib's masked MultiDiscrete distribution."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import revolution_env  # noqa: E402
from revolution_env.interop.torch import MaskedCategorical, MaskedMultiCategorical  # noqa: E402


def env_masks(players: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    env = revolution_env.parallel_env(players=players)
    observations, _ = env.reset(seed=players)
    masks = []
    while len(masks) < n and env.agents:
        masks += [o["action_mask"] for o in observations.values()]
        actions = {a: env.action_space(a).sample(observations[a]["action_mask"]) for a in env.agents}
        observations, *_ = env.step(actions)
    return np.stack(masks[:n]), env.action_space("player_0").nvec


def test_samples_keep_to_the_mask_and_log_probs_are_the_masked_softmax():
    masks, nvec = env_masks(3, 16)
    torch.manual_seed(0)
    logits = torch.randn(len(masks), int(nvec.sum()))
    dist = MaskedMultiCategorical(logits, torch.as_tensor(masks), nvec)
    offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
    for _ in range(5):
        actions = dist.sample()
        assert masks[np.arange(len(masks))[:, None], offsets + actions.numpy()].all()
    actions = dist.mode
    expected = torch.zeros(len(masks))
    for d, (start, n) in enumerate(zip(offsets, nvec)):
        block = logits[:, start : start + n].masked_fill(
            ~torch.as_tensor(masks[:, start : start + n], dtype=torch.bool), -1e8
        )
        expected += torch.log_softmax(block, -1).gather(1, actions[:, d : d + 1]).squeeze(1)
    assert torch.allclose(dist.log_prob(actions), expected, atol=1e-4)
    assert torch.isfinite(dist.entropy()).all() and (dist.entropy() >= 0).all()
    # a torch Distribution (what TorchRL's ProbabilisticActor takes), sample shapes as torch's
    assert isinstance(dist, torch.distributions.Distribution) and dist.event_shape == (len(nvec),)
    assert dist.batch_shape == (len(masks),) and dist.sample((4,)).shape == (4, len(masks), len(nvec))
    assert torch.equal(dist.deterministic_sample, dist.mode)


def test_it_agrees_with_sb3_contribs_distribution():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib.common.maskable.distributions import MaskableMultiCategoricalDistribution

    masks, nvec = env_masks(2, 8)
    torch.manual_seed(1)
    logits = (torch.randn(len(masks), int(nvec.sum())) * 3).requires_grad_()
    theirs = MaskableMultiCategoricalDistribution(list(nvec)).proba_distribution(logits)
    theirs.apply_masking(masks)
    actions = theirs.sample()
    assert masks[np.arange(len(masks))[:, None], np.r_[0, np.cumsum(nvec)[:-1]] + actions.numpy()].all()
    expected = [theirs.log_prob(actions), theirs.entropy()]
    (expected_grad,) = torch.autograd.grad(expected[0].sum() + 0.3 * expected[1].sum(), logits)
    ours = MaskedMultiCategorical(logits, torch.as_tensor(masks), nvec)
    got = [ours.log_prob(actions), ours.entropy()]
    (grad,) = torch.autograd.grad(got[0].sum() + 0.3 * got[1].sum(), logits)
    for mine, reference in zip(got, expected):
        assert torch.allclose(mine, reference, atol=1e-4)
    assert torch.allclose(grad, expected_grad, atol=1e-5)
    assert (grad[torch.as_tensor(masks) == 0] == 0).all()  # a masked value's logit gets no gradient


def test_trainings_maskable_distribution_agrees_with_sb3_contribs():
    """revolution_training.distributions (MaskablePPO's distribution) against sb3-contrib's, the values PPO's loss
    reads and their gradients: log-probabilities, entropies (masked values add nothing), and the mode."""
    pytest.importorskip("sb3_contrib")
    from revolution_training.distributions import GroupedMaskableMultiCategorical
    from sb3_contrib.common.maskable.distributions import MaskableMultiCategoricalDistribution

    masks, nvec = env_masks(3, 12)
    torch.manual_seed(2)
    logits = (torch.randn(len(masks), int(nvec.sum())) * 3).requires_grad_()
    values = {}
    for name, dist in [("theirs", MaskableMultiCategoricalDistribution(list(nvec))),
                       ("ours", GroupedMaskableMultiCategorical(list(nvec)))]:  # fmt: skip
        dist.proba_distribution(logits)
        dist.apply_masking(masks)
        actions = values["theirs"][0] if values else dist.sample()
        log_p, entropy = dist.log_prob(actions), dist.entropy()
        (grad,) = torch.autograd.grad(log_p.sum() - 0.01 * entropy.sum(), logits)
        values[name] = (actions, log_p, entropy, grad, dist.mode())
    for theirs, ours in zip(values["theirs"][1:4], values["ours"][1:4]):
        assert torch.allclose(ours, theirs, atol=1e-4)
    assert torch.equal(values["ours"][4], values["theirs"][4])


def test_the_discrete_case_and_bad_masks():
    logits = torch.zeros(2, 4)
    mask = torch.tensor([[True, False, False, True], [False, True, False, False]])
    dist = MaskedCategorical(logits, mask)
    assert set(dist.sample((50,)).flatten().tolist()) <= {0, 1, 3}
    assert torch.allclose(dist.probs[1], torch.tensor([0.0, 1.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match="at least one value"):
        MaskedCategorical(logits, torch.zeros(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="sum\\(nvec\\)"):
        MaskedMultiCategorical(torch.zeros(1, 5), torch.ones(1, 5), [2, 2])


def test_the_mode_is_the_first_most_likely_legal_value_of_each_dimension_ties_included():
    """The mode per dimension is ``argmax``'s: the first of the most likely legal values (logits drawn from a few
    values, so that ties are common)."""
    masks, nvec = env_masks(3, 64)
    torch.manual_seed(1)
    logits = torch.randint(0, 3, (len(masks), int(nvec.sum()))).float()
    mode = MaskedMultiCategorical(logits, torch.as_tensor(masks), nvec).mode
    offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
    for d, (start, n) in enumerate(zip(offsets, nvec)):
        block = logits[:, start : start + n].masked_fill(~torch.as_tensor(masks[:, start : start + n]).bool(), -1e9)
        assert torch.equal(mode[:, d], torch.argmax(block, -1)), d

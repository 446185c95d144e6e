"""The categorical action head (looprl.policies.distributions.CategoricalHead)."""

from __future__ import annotations

import torch

from looprl.policies.distributions import CategoricalHead, GaussianHead, TanhGaussianHead


def test_samples_follow_the_softmax_of_the_logits() -> None:
    logits = torch.tensor([[0.0, 1.0, -1.0, 2.0], [3.0, 0.0, 0.0, -2.0]])
    rows = logits.repeat_interleave(100_000, dim=0)
    generator = torch.Generator().manual_seed(0)
    action, log_prob = CategoricalHead.sample_and_log_prob(rows, generator)
    for row in range(2):
        counts = torch.bincount(action[row * 100_000:(row + 1) * 100_000], minlength=4)
        probs = torch.softmax(logits[row], -1)
        # 5 standard deviations of a binomial count, the deviations of 8 categories
        tolerance = 5 * (100_000 * probs * (1 - probs)).sqrt()
        assert ((counts - 100_000 * probs).abs() <= tolerance).all(), (counts, probs)
    assert torch.allclose(log_prob, CategoricalHead.log_prob(rows, action))


def test_sample_and_sample_and_log_prob_draw_the_same_actions() -> None:
    logits = torch.randn(64, 3, generator=torch.Generator().manual_seed(1))
    alone = CategoricalHead.sample(logits, torch.Generator().manual_seed(2))
    together, _ = CategoricalHead.sample_and_log_prob(logits, torch.Generator().manual_seed(2))
    assert torch.equal(alone, together)
    assert alone.shape == (64,) and alone.dtype == torch.int64


def test_sampling_keeps_the_logits_and_their_gradients() -> None:
    logits = torch.randn(4, 3, requires_grad=True)
    before = logits.detach().clone()
    CategoricalHead.sample(logits)
    action, log_prob = CategoricalHead.sample_and_log_prob(logits)
    assert torch.equal(logits.detach(), before)
    log_prob.sum().backward()
    assert logits.grad is not None and action.shape == (4,)


def test_gaussian_heads_sample_and_log_prob_in_one_pass() -> None:
    params = 0.3 * torch.randn(6, 4, generator=torch.Generator().manual_seed(3))  # (unsaturated)
    for head in (GaussianHead([-2.0, 0.0], [2.0, 1.0]), TanhGaussianHead([-2.0, 0.0], [2.0, 1.0])):
        action, log_prob = head.sample_and_log_prob(params, torch.Generator().manual_seed(4))
        assert torch.equal(action, head.sample(params, torch.Generator().manual_seed(4)))
        assert torch.allclose(log_prob, head.log_prob(params, action), atol=1e-4)

"""GAE and V-trace on ``[T + 1, B]`` segments, against hand-computed values and naive loops."""

from __future__ import annotations

import pytest
import torch

from looprl.agents.losses import segment_gae, vtrace
from looprl.agents.losses.vtrace import discounted_sums


def random_segment(rows: int = 9, streams: int = 4, seed: int = 0):
    """Rewards, values, done and truncated flags of ``[rows, streams]`` with episode ends."""
    g = torch.Generator().manual_seed(seed)
    reward = torch.randn(rows, streams, generator=g)
    value = torch.randn(rows, streams, generator=g)
    end = torch.rand(rows, streams, generator=g) < 0.25
    done = end & (torch.rand(rows, streams, generator=g) < 0.5)
    truncated = end & ~done
    reward[1:][end[:-1]] = 0.0  # the row after an episode end starts a new one (reward 0)
    return reward, value, done, truncated


def naive_gae(reward, value, done, truncated, gamma, lam):
    """GAE by its definition: ``A_t = sum_l (gamma lam)^l delta_{t+l}`` within the episode."""
    rows, streams = reward.shape[0] - 1, reward.shape[1]
    end = done | truncated
    advantages = torch.zeros(rows, streams)
    for b in range(streams):
        for t in range(rows):
            if end[t, b]:
                continue
            total, k = 0.0, t
            while k < rows:
                bootstrap = 0.0 if done[k + 1, b] else value[k + 1, b]
                delta = reward[k + 1, b] + gamma * bootstrap - value[k, b]
                total += (gamma * lam) ** (k - t) * delta
                if end[k + 1, b]:
                    break
                k += 1
            advantages[t, b] = total
    return advantages


def naive_vtrace(mu, pi, reward, value, done, truncated, gamma, lam, clip_rho, clip_c):
    """V-trace by eq. 1 of Espeholt et al. (explicit sums of products), plus the pg advantage."""
    rows, streams = reward.shape[0] - 1, reward.shape[1]
    end = done | truncated
    ratio = torch.exp(pi - mu)
    vs = torch.zeros(rows, streams)
    advantages = torch.zeros(rows, streams)

    def v_trace(t: int, b: int) -> float:
        total, k, trace = float(value[t, b]), t, 1.0
        while k < rows:
            bootstrap = 0.0 if done[k + 1, b] else value[k + 1, b]
            rho = min(clip_rho, ratio[k, b])
            delta = rho * (reward[k + 1, b] + gamma * bootstrap - value[k, b])
            total += gamma ** (k - t) * trace * delta
            if end[k + 1, b]:
                break
            trace *= lam * min(clip_c, ratio[k, b])
            k += 1
        return total

    for b in range(streams):
        for t in range(rows):
            if end[t, b]:
                continue
            vs[t, b] = v_trace(t, b)
            ends = t + 1 == rows or end[t + 1, b]
            next_v = value[t + 1, b] if ends else v_trace(t + 1, b)
            bootstrap = 0.0 if done[t + 1, b] else next_v
            rho = min(clip_rho, ratio[t, b])
            advantages[t, b] = rho * (reward[t + 1, b] + gamma * bootstrap - value[t, b])
    return vs, advantages


def test_segment_gae_hand_computed():
    # three streams of 4 rows: an episode that terminates at row 2, one truncated at row 2,
    # one without end; gamma 0.5, lambda 1
    reward = torch.tensor([0.0, 1.0, 2.0, 3.0]).repeat(3, 1).T.contiguous()
    value = torch.tensor([1.0, 2.0, 3.0, 4.0]).repeat(3, 1).T.contiguous()
    done = torch.zeros(4, 3, dtype=torch.bool)
    truncated = torch.zeros(4, 3, dtype=torch.bool)
    done[2, 0] = True
    truncated[2, 1] = True
    advantages, returns, mask = segment_gae(reward, value, done, truncated, 0.5, 1.0)
    assert mask.tolist() == [[True] * 3, [True] * 3, [False, False, True]]
    # terminal: R1 = 2, R0 = 1 + 0.5 * 2; truncated: R1 = 2 + 0.5 * V2 = 3.5, R0 = 1 + 0.5 * 3.5
    expected_returns = torch.tensor([[2.0, 2.75, 3.25], [2.0, 3.5, 4.5], [0.0, 0.0, 5.0]])
    torch.testing.assert_close(returns, expected_returns)
    torch.testing.assert_close(advantages, (expected_returns - value[:-1]) * mask)


@pytest.mark.parametrize("lam", [0.0, 0.8, 1.0])
def test_segment_gae_matches_definition(lam):
    reward, value, done, truncated = random_segment()
    advantages, returns, mask = segment_gae(reward, value, done, truncated, 0.9, lam)
    expected = naive_gae(reward, value, done, truncated, 0.9, lam)
    torch.testing.assert_close(advantages, expected)
    torch.testing.assert_close(returns[mask], (expected + value[:-1])[mask])


@pytest.mark.parametrize(("lam", "clip_rho", "clip_c"), [(1.0, 1.0, 1.0), (0.9, 2.0, 0.5)])
def test_vtrace_matches_paper_formula(lam, clip_rho, clip_c):
    reward, value, done, truncated = random_segment(seed=1)
    g = torch.Generator().manual_seed(2)
    mu = -torch.rand(8, 4, generator=g) * 2
    pi = -torch.rand(8, 4, generator=g) * 2
    vs, advantages = vtrace(mu, pi, reward, value, done, truncated, 0.9, lam, clip_rho, clip_c)
    expected_vs, expected_adv = naive_vtrace(
        mu, pi, reward, value, done, truncated, 0.9, lam, clip_rho, clip_c
    )
    torch.testing.assert_close(vs, expected_vs)
    torch.testing.assert_close(advantages, expected_adv)


def test_vtrace_on_policy_gives_n_step_returns():
    """rho = c = 1: ``v_t`` is the discounted sum of rewards to the episode or segment end,
    bootstrapped there (Monte-Carlo at termination), and the advantage is ``v_t - V_t``."""
    reward, value, done, truncated = random_segment(seed=3)
    log_prob = -torch.rand(8, 4)
    vs, advantages = vtrace(log_prob, log_prob, reward, value, done, truncated, 0.9)
    end = done | truncated
    for b in range(4):
        for t in range(8):
            if end[t, b]:
                continue
            total, k = 0.0, t
            while True:
                total += 0.9 ** (k - t) * reward[k + 1, b]
                k += 1
                if end[k, b] or k == 8:
                    break
            if not done[k, b]:
                total += 0.9 ** (k - t) * value[k, b]
            assert vs[t, b] == pytest.approx(float(total), abs=1e-5)
            assert advantages[t, b] == pytest.approx(float(total - value[t, b]), abs=1e-5)


def test_vtrace_on_policy_equals_gae_returns():
    reward, value, done, truncated = random_segment(seed=4)
    log_prob = -torch.rand(8, 4)
    vs, _ = vtrace(log_prob, log_prob, reward, value, done, truncated, 0.9, lam=0.7)
    _, returns, _ = segment_gae(reward, value, done, truncated, 0.9, 0.7)
    torch.testing.assert_close(vs, returns)


def test_vtrace_clips_ratios_and_ignores_final_rows():
    reward, value, done, truncated = random_segment(seed=5)
    log_prob = -torch.rand(8, 4)
    on_policy = vtrace(log_prob, log_prob, reward, value, done, truncated, 0.9)
    # ratios above the clip levels behave as on-policy; garbage log-probs at final rows too
    greedy = log_prob + 1.0
    greedy[(done | truncated)[:-1]] = float("nan")
    clipped = vtrace(log_prob, greedy, reward, value, done, truncated, 0.9)
    torch.testing.assert_close(clipped[0], on_policy[0])
    torch.testing.assert_close(clipped[1], on_policy[1])
    # ratios below 1 change the targets
    shy = vtrace(log_prob, log_prob - 1.0, reward, value, done, truncated, 0.9)
    assert not torch.allclose(shy[0], on_policy[0])


def test_discounted_sums_are_the_same_with_gradients_and_differentiable() -> None:
    g = torch.Generator().manual_seed(0)
    deltas, decay = torch.randn(7, 3, generator=g), torch.rand(7, 3, generator=g)
    expected, last = torch.zeros(7, 3), torch.zeros(3)
    for t in reversed(range(7)):
        last = expected[t] = deltas[t] + decay[t] * last
    plain = discounted_sums(deltas, decay)
    tracked = deltas.clone().requires_grad_()
    summed = discounted_sums(tracked, decay)  # (torch's loop, which autograd follows)
    torch.testing.assert_close(plain, expected)
    torch.testing.assert_close(summed, expected)
    summed[0].sum().backward()  # d x_0 / d delta_t = decay_0 * ... * decay_{t-1}
    torch.testing.assert_close(tracked.grad, torch.cat([torch.ones(1, 3), decay[:-1]]).cumprod(0))

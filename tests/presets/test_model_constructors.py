"""ALL's ``model_constructor`` on the value-based presets, and ALL's models modules
(``looprl.presets.classic_control.models``, ``looprl.presets.atari.models``): called as ALL's
presets call them, the module built is the network trained."""

from __future__ import annotations

import inspect
import json
import pickle
from pathlib import Path

import pytest
import torch
from tests.helpers import evaluations_until

from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.checkpoint import load_checkpoint, save_checkpoint
from looprl.experiments.experiment import seed_everything
from looprl.nn import CategoricalDueling, Dueling, Linear0, NoisyFactorizedLinear
from looprl.presets import atari, classic_control
from looprl.presets.classic_control import models

#: ALL 0.9.1's all/presets/{classic_control,atari}/models/__init__.py: name -> parameters
ALL_SIGNATURES = {
    "classic_control": {
        "fc_relu_q": "(env, hidden=64)", "dueling_fc_relu_q": "(env)",
        "fc_relu_features": "(env, hidden=64)", "fc_value_head": "(hidden=64)",
        "fc_policy_head": "(env, hidden=64)", "fc_relu_dist_q": "(env, hidden=64, atoms=51)",
        "fc_relu_rainbow": "(env, hidden=64, atoms=51, sigma=0.5)"},
    "atari": {
        "nature_dqn": "(env, frames=4)", "nature_ddqn": "(env, frames=4)",
        "nature_features": "(frames=4)", "nature_value_head": "()",
        "nature_policy_head": "(env)", "nature_c51": "(env, frames=4, atoms=51)",
        "nature_rainbow": "(env, frames=4, hidden=512, atoms=51, sigma=0.5)"},
}
#: ALL's value-based presets' default constructors, and the keywords they are called with
CLASSIC = {"dqn": ("fc_relu_q", {}), "ddqn": ("dueling_fc_relu_q", {}),
           "c51": ("fc_relu_dist_q", {"atoms": 51}),
           "rainbow": ("fc_relu_rainbow", {"atoms": 51, "sigma": 0.5}),
           "vqn": ("dueling_fc_relu_q", {}), "vsarsa": ("dueling_fc_relu_q", {})}
ATARI = {"dqn": ("nature_dqn", {}), "ddqn": ("nature_ddqn", {}),
         "c51": ("nature_c51", {"atoms": 51}),
         "rainbow": ("nature_rainbow", {"atoms": 51, "sigma": 0.5}),
         "vqn": ("nature_ddqn", {}), "vsarsa": ("nature_ddqn", {})}
SMALL_REPLAY = {"replay_buffer_size": 1000, "replay_start_size": 100}
#: a module-level lambda (pickle finds it by its name, "<lambda>": it cannot)
MODULE_LAMBDA = lambda env: models.fc_relu_q(env)  # noqa: E731


def _cartpole() -> GymEnvironment:
    return GymEnvironment("CartPole-v1", device="cpu")


def _weights(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()]).clone()


@pytest.mark.parametrize("family", sorted(ALL_SIGNATURES))
def test_the_models_modules_have_alls_functions_and_signatures(family) -> None:
    module = {"classic_control": models,
              "atari": pytest.importorskip("looprl.presets.atari.models")}[family]
    got = {name: "({})".format(", ".join(
        p.name if p.default is p.empty else f"{p.name}={p.default!r}"
        for p in inspect.signature(getattr(module, name)).parameters.values()))
        for name in ALL_SIGNATURES[family]}
    assert got == ALL_SIGNATURES[family]


@pytest.mark.parametrize(("name", "frames", "hyperparameters"), [
    # C51 at lr 3e-3 (not 1e-3): it reaches 100 by frame 2,000 (seeds 1-3), not 3,000-4,000
    ("dqn", 3_000, {}), ("c51", 6_000, {"lr": 3e-3}),
    # Rainbow at lr 3e-3 (not 1e-3): it learns in as few frames (2,000-4,000, seeds 1-3) as
    # with 32 gradient steps every 64 frames at 1e-3, with its 16 (half the updates)
    ("rainbow", 10_000, {"lr": 3e-3}),
], ids=["dqn", "c51", "rainbow"])
def test_alls_default_constructors_learn_cartpole(name, frames, hyperparameters, tmp_path
                                                  ) -> None:
    """ALL's fc_relu_q (DQN) and fc_relu_rainbow (Rainbow) from looprl's models module reach an
    evaluation of 100 on CartPole-v1 (random play: about 22, the untrained greedy agent 10)."""
    seed_everything(1)
    env = GymEnvironment("CartPole-v1")
    function = getattr(models, CLASSIC[name][0])
    preset = getattr(classic_control, name).hyperparameters(
        model_constructor=function, **hyperparameters).env(env).device("cpu").build()
    head = {"dqn": torch.nn.Linear, "c51": Linear0, "rainbow": CategoricalDueling}[name]
    assert type(preset.model[-1]) is head  # (ALL's network, not the preset's own)
    experiment = make_experiment(preset, env, train_steps=frames, logdir=str(tmp_path),
                                 quiet=True, verbose=False, seed=1)
    evaluations = evaluations_until(experiment, frames, 1_000, 100)
    assert max(evaluations) >= 100, evaluations


@pytest.mark.parametrize("name", sorted(CLASSIC))
def test_a_constructor_is_called_as_alls_presets_call_it_and_its_module_is_trained(name) -> None:
    calls, built = [], []

    def constructor(env, **keywords):
        calls.append((env, keywords))
        built.append(getattr(models, CLASSIC[name][0])(env, **keywords))
        return built[-1]

    env = _cartpole()
    builder = getattr(classic_control, name).hyperparameters(model_constructor=constructor)
    if name not in ("vqn", "vsarsa"):
        builder = builder.hyperparameters(replay_start_size=64, minibatch_size=32,
                                          update_frequency=1, gradient_steps=1)
    preset = builder.env(env).device("cpu").build()
    assert calls == [(env, CLASSIC[name][1])]
    assert preset.model is built[0]
    assert preset.hyperparameters["model_constructor"] is constructor
    before = _weights(built[0])
    agent = preset.agent(train_steps=10_000)
    state = env.reset(seed=0)
    for _ in range(200):
        state = env.step(agent.act(state))
        if state.done:
            state = env.reset()
    assert not torch.equal(before, _weights(built[0]))


@pytest.mark.parametrize("name", sorted(ATARI))
def test_every_atari_preset_takes_alls_constructor(name) -> None:
    pytest.importorskip("ale_py")
    from looprl.environments.atari import AtariEnvironment
    from looprl.presets.atari import models as atari_models

    env = AtariEnvironment("Breakout", seed=0, max_episode_frames=800)
    function, keywords = ATARI[name]
    seed_everything(0)
    builder = getattr(atari, name).hyperparameters(
        model_constructor=getattr(atari_models, function))
    if name not in ("vqn", "vsarsa"):
        builder = builder.hyperparameters(**SMALL_REPLAY)
    preset = builder.env(env).device("cpu").build()
    seed_everything(0)
    expected = getattr(atari_models, function)(env, **keywords)
    assert str(preset.model) == str(expected)
    assert torch.equal(_weights(preset.model), _weights(expected))
    head = {"ddqn": Dueling, "vqn": Dueling, "vsarsa": Dueling, "rainbow": CategoricalDueling}
    assert type(preset.model[-1]) is head.get(name, Linear0)
    preset.agent(train_steps=1000)
    assert preset.test_agent().act(env.reset(seed=0)) in range(env.action_space.n)


@pytest.mark.parametrize(("name", "function", "wanted"), [
    ("dqn", models.fc_relu_dist_q, r"needs \(1, 2\)"),
    ("vqn", models.fc_relu_dist_q, r"needs \(1, 2\)"),
    ("c51", lambda env, atoms: models.fc_relu_q(env), r"needs \(1, 102\) or \(1, 2, 51\)"),
])
def test_a_network_of_the_wrong_shape_is_one_line(name, function, wanted) -> None:
    builder = getattr(classic_control, name).hyperparameters(model_constructor=function)
    with pytest.raises(ValueError, match=rf"^{name}: the network model_constructor=\S+ built "
                       rf"returns shape \(1, \d+\) for an input of shape \(1, 4\); "
                       rf"{name} {wanted}$") as error:
        builder.env(_cartpole()).device("cpu").build()
    assert "\n" not in str(error.value)


def test_batch_norm_that_cannot_act_on_one_row_is_one_line_at_build() -> None:
    """An agent acts on one row in training mode, where ``BatchNorm1d`` fails: the build says
    so (was torch's traceback at the first acting step); the check leaves its statistics."""
    def batch_norm(env):
        return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 64),
                                   torch.nn.BatchNorm1d(64), torch.nn.ReLU(),
                                   torch.nn.Linear(64, 2))

    with pytest.raises(ValueError, match=r"^dqn: the network model_constructor=\S+ built fails "
                       r"on an input of shape \(1, 4\): .*BatchNorm in training mode cannot "
                       r"normalise the batch of one row an agent acts on: use nn.LayerNorm or "
                       r"nn.GroupNorm$"):
        classic_control.dqn.hyperparameters(model_constructor=batch_norm).env(
            _cartpole()).device("cpu").build()
    from looprl.presets.constructors import run_checked

    module = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    run_checked("dqn", "model_constructor", "f", module, [torch.ones(2, 4)], [(2, 3)])
    assert module.training and not module[1].running_mean.any()
    assert module[1].num_batches_tracked == 0


def test_a_constructor_of_other_arguments_or_with_features_is_one_line() -> None:
    with pytest.raises(TypeError, match=r"^c51 calls model_constructor\(env, atoms=51\), as "
                       r"ALL's preset does, but .*fc_relu_q does not take that"):
        classic_control.c51.hyperparameters(model_constructor=models.fc_relu_q).env(
            _cartpole()).device("cpu").build()
    with pytest.raises(ValueError, match=r"^dqn: model_constructor builds the network that "
                       r"features='mlp' would: give one of them$"):
        classic_control.dqn.hyperparameters(model_constructor=models.fc_relu_q,
                                            features="mlp").env(_cartpole()).build()


def test_an_import_path_builds_and_run_json_names_the_constructor(tmp_path) -> None:
    """The CLI's ``algorithm.model_constructor=pkg.module:fn`` (a string), and a function: both
    written to ``run.json`` as ``module:qualname``; the defaults unchanged (None)."""
    path = "looprl.presets.classic_control.models:fc_relu_q"
    assert classic_control.dqn.default_hyperparameters["model_constructor"] is None
    env = _cartpole()
    for value in (path, models.fc_relu_q):
        preset = classic_control.dqn.hyperparameters(model_constructor=value).env(env).device(
            "cpu").build()
        assert isinstance(preset.model[1], torch.nn.Linear) and preset.model[1].out_features == 64
        logdir = tmp_path / str(id(value))
        experiment = make_experiment(preset, env, logdir=str(logdir), quiet=True)
        experiment.close()
        run = json.loads(next(logdir.rglob("run.json")).read_text())
        assert run["hyperparameters"]["model_constructor"] == path


def test_a_preset_with_a_module_level_constructor_pickles_and_checkpoints(tmp_path) -> None:
    env = _cartpole()
    preset = classic_control.rainbow.hyperparameters(
        model_constructor=models.fc_relu_rainbow).env(env).device("cpu").build()
    loaded = pickle.loads(pickle.dumps(preset))  # (as Ray ships a preset to its workers)
    assert loaded.hyperparameters["model_constructor"] is models.fc_relu_rainbow
    assert any(isinstance(layer, NoisyFactorizedLinear) for layer in loaded.model.modules())
    experiment = make_experiment(preset, env, logdir=str(tmp_path / "ok"), quiet=True)
    experiment.train(frames=50)
    save_checkpoint(experiment)
    assert load_checkpoint(Path(experiment.logger.log_dir)) is not None
    experiment.close()
    for constructor in (MODULE_LAMBDA, lambda env: models.fc_relu_q(env)):
        preset = classic_control.dqn.hyperparameters(model_constructor=constructor).env(
            env).device("cpu").build()
        experiment = make_experiment(preset, env, logdir=str(tmp_path / "bad"), quiet=True)
        with pytest.raises(TypeError, match=r"^This experiment cannot be checkpointed: .*<lambda>"
                           r".*model constructors must be module-level functions\)$") as error:
            save_checkpoint(experiment)
        assert "\n" not in str(error.value)
        experiment.close()


def test_the_cli_takes_a_constructors_import_path() -> None:
    """``looprl run algorithm=c51 algorithm.model_constructor=pkg.module:fn``."""
    pytest.importorskip("hydra")
    from hydra import compose, initialize

    from looprl.configs import build, register
    register()
    path = "looprl.presets.classic_control.models:fc_relu_dist_q"
    with initialize(version_base="1.3", config_path=None):
        cfg = compose("looprl", overrides=["algorithm=c51", f"algorithm.model_constructor={path}"])
    built = build(cfg)
    preset = built.builder.env(built.env).device("cpu").build()
    assert preset.hyperparameters["model_constructor"] == path
    assert type(preset.model[-1]) is Linear0 and preset.model[-1].out_features == 2 * 51


def test_alls_init_scale_of_noisy_layers() -> None:
    """ALL's ``init_scale``: means uniform in +-sqrt(init_scale / inputs), 0: zeros (Rainbow's
    advantage layers); without it looprl's +-1 / sqrt(inputs)."""
    zero = NoisyFactorizedLinear(100, 50, sigma_init=0.5, init_scale=0.0)
    assert not zero.weight_mu.any() and not zero.bias_mu.any()
    assert torch.allclose(zero.weight_sigma, torch.full_like(zero.weight_sigma, 0.05))
    torch.manual_seed(0)
    wide = NoisyFactorizedLinear(100, 500, init_scale=3).weight_mu.abs().max()
    narrow = NoisyFactorizedLinear(100, 500).weight_mu.abs().max()
    assert 0.1 < wide <= 3 ** 0.5 / 10 and narrow <= 0.1
    layer = models.fc_relu_rainbow(_cartpole())[-1].advantage_model
    assert not layer.weight_mu.any()


def test_a_module_made_on_another_device_is_checked_there() -> None:
    """ALL's presets take ``constructor(env).cuda()``: the build's check sends its sample to
    the module's device (here torch's ``meta`` device, which has shapes and no data)."""
    import torch

    from looprl.presets.constructors import run_checked

    module = torch.nn.Linear(4, 2).to("meta")
    output = run_checked("dqn", "model_constructor", "f", module, [torch.zeros(1, 4)], [(1, 2)])
    assert output.shape == (1, 2) and output.device.type == "meta"

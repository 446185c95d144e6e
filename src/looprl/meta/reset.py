"""``NetworkReset``: periodic re-initialization of a network's layers, against the loss of
plasticity (Nikishin et al., 2022, https://arxiv.org/abs/2205.07802), or shrink-and-perturb (Ash
& Adams, 2020, https://arxiv.org/abs/1910.08475): ``theta <- shrink * theta + perturb *
theta_fresh``. Parameters change in place; the optimizer's state is kept."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from looprl.core.imports import import_object
from looprl.core.ranges import NON_NEGATIVE, UNIT
from looprl.core.suggest import check_choice, check_count
from looprl.meta.component import MetaComponent

__all__ = ["NetworkReset", "layers_of"]


def layers_of(model: nn.Module) -> dict[str, nn.Module]:
    """The modules of ``model`` that own parameters directly, by name, in registration
    order (``'0'``, ``'2'``, nested ``'body.0'``)."""
    return {name: module for name, module in model.named_modules()
            if next(module.parameters(recurse=False), None) is not None}


class NetworkReset(MetaComponent):
    """Every ``every`` updates, re-initialize chosen layers of ``metrics['model']``.

    Args:
        layers: layer names or name prefixes (``'head'`` selects ``'head.0'``, ``'head.2'``).
        last: select the last ``last`` layers (the default, 1, when ``layers`` is not given).
        mode: ``'reset'`` (fresh initialization; buffers too) or ``'shrink_perturb'``.
        initializer: re-initializes a layer in place (default: its ``reset_parameters``).
    """

    shown = ("every", "layers", "last", "mode")
    state_attributes = ("updates", "resets")

    def __init__(self, every: int, layers: Sequence[str] | None = None,
                 last: int | None = None, mode: str = "reset", shrink: float = 0.4,
                 perturb: float = 0.1, initializer: Callable[[nn.Module], Any] | None = None):
        super().__init__()
        check_count(every=every)
        if layers is not None and last is not None:
            raise ValueError("Choose layers by name (layers=...) or by position (last=...), "
                             "not both")
        layers = [layers] if isinstance(layers, str) else layers
        if layers is not None and not layers:
            raise ValueError("layers=[] names no layer to reset: give layer names, or last=k")
        check_count(optional=True, last=last)
        self.shrink = float(UNIT.check("shrink", shrink, "NetworkReset"))
        self.perturb = float(NON_NEGATIVE.check("perturb", perturb, "NetworkReset"))
        self.every, self.mode = int(every), check_choice("mode", mode, ("reset", "shrink_perturb"))
        self.layers = None if layers is None else tuple(layers)
        self.last = 1 if layers is None and last is None else last
        if isinstance(initializer, str):  # (an import path: a config's)
            initializer = import_object(initializer, "NetworkReset's initializer")
        if initializer is not None and not callable(initializer):
            raise TypeError(f"NetworkReset's initializer re-initializes a layer: a function of "
                            f"the layer (or its import path), got {initializer!r:.40}")
        self.initializer = initializer
        self.updates = self.resets = 0
        self._chosen: tuple[int, dict[str, nn.Module]] | None = None
        self.post_update_methods.append(self.maybe_reset)

    def chosen_layers(self, model: nn.Module) -> dict[str, nn.Module]:
        """The layers of ``model`` this component resets (``ValueError`` if one is missing)."""
        if self._chosen is not None and self._chosen[0] == id(model):
            return self._chosen[1]
        layers = layers_of(model)
        if self.layers is not None:
            chosen: dict[str, nn.Module] = {}
            for prefix in self.layers:
                names = [n for n in layers if n == prefix or n.startswith(prefix + ".")]
                if not names:
                    raise ValueError(f"The model has no layer {prefix!r}; its layers (or "
                                     f"prefixes of them) are: {', '.join(layers)}")
                chosen.update((name, layers[name]) for name in names)
        elif 1 <= self.last <= len(layers):
            chosen = dict(list(layers.items())[-self.last:])
        else:
            raise ValueError(f"last={self.last}, but the model has {len(layers)} layers: "
                             f"{', '.join(layers)}")
        for name, layer in chosen.items():
            if self.initializer is None and not callable(getattr(layer, "reset_parameters", None)):
                raise ValueError(f"Layer {name!r} ({type(layer).__name__}) has no "
                                 "reset_parameters(); pass initializer=...")
        self._chosen = (id(model), chosen)
        return chosen

    def maybe_reset(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Count the update; reset the chosen layers when it completes a period."""
        model = metrics.get("model")
        if not isinstance(model, nn.Module):
            raise KeyError("NetworkReset needs the network as metrics['model'] "
                           f"(an nn.Module), got {type(model).__name__}")
        chosen = self.chosen_layers(model)
        self.updates += 1
        if self.updates % self.every == 0:
            self.reset(chosen)
        return metrics

    def reset(self, layers: dict[str, nn.Module]) -> None:
        """Re-initialize (or shrink and perturb) ``layers`` now, in order, from fresh copies."""
        with torch.no_grad():
            for layer in layers.values():
                fresh = copy.deepcopy(layer)
                if self.initializer is not None:
                    self.initializer(fresh)
                else:
                    fresh.reset_parameters()
                new = dict(fresh.named_parameters(recurse=False))
                if self.mode == "shrink_perturb":
                    for name, parameter in layer.named_parameters(recurse=False):
                        parameter.mul_(self.shrink).add_(new[name], alpha=self.perturb)
                    continue
                new.update(fresh.named_buffers(recurse=False))
                for name, tensor in [*layer.named_parameters(recurse=False),
                                     *layer.named_buffers(recurse=False)]:
                    tensor.copy_(new[name])
        self.resets += 1

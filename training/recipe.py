"""Recipes: a bot's whole training, stage after stage, from one config and one command.

```yaml
algorithm: mmd             # the base: a whole config, shared by the stages
game:
  players: 2
stages:
  - name: imitation        # each stage: a name, its own total_steps, and the keys it changes
    total_steps: 1_000_000
    imitation:
      teacher: value
  - name: selfplay
    start: run             # from the previous stage: run (policy and value network), best or latest (policy only)
    total_steps: 4_000_000
    selfplay:
      enabled: true
    ppo:
      learning_rate: 1.0e-4   # this key alone: the stage keeps the base's other ppo keys
```

``revolution train --config RECIPE`` runs the stages one after another, each a normal run in its own folder
``<out>/<k>-<name>/`` (``state.json``, saves, ``latest.pt``, ``best.pt``, TensorBoard), each starting from the
previous stage as its ``start`` says (``init_from`` written by the recipe, never by hand), and copies the last
stage's ``best.pt`` and ``latest.pt`` to ``<out>/``. ``--resume`` continues the first stage not yet finished; a stage
is finished when its run reached its ``total_steps``. Every checkpoint records the stages behind it
(``origin``), so a card can add them up.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from revolution_training.config import TrainConfig, dump_config, stage_configs

from revolution_env.common.files import atomic_write


def stage_folder(out: Path, index: int, name: str) -> Path:
    return out / f"{index + 1}-{name}"


def run_recipe(
    config: TrainConfig,
    out: str | Path | None,
    resume: bool,
    train: Callable[..., Any],
    read_state: Callable[[Path], dict[str, Any] | None],
    progress: bool = False,
) -> Any:
    """Train every stage of ``config`` in turn (``train`` and ``read_state`` are ``revolution_training.train``'s);
    returns the last stage's result, or the result of the stage that was interrupted."""
    folder = Path(out if out is not None else config.out)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out: {folder} is a file, not a run folder")
    recipe_file = folder / "recipe.yaml"
    if recipe_file.exists() and not resume:
        raise ValueError(f"{folder}: already holds a recipe's run; pass --resume to continue it, or another --out")
    if resume and not recipe_file.exists():
        raise ValueError(f"{folder}: no recipe run to resume (no recipe.yaml)")
    if resume:  # the recipe the run was started with, perhaps from before the sections
        from revolution_training.config import load_config

        config = load_config(recipe_file, stored=True)
    folder.mkdir(parents=True, exist_ok=True)
    if not recipe_file.exists():
        atomic_write(recipe_file, lambda fh: fh.write(dump_config(config)))  # what --resume continues
    result = None
    previous: Path | None = None
    for index, (name, start, stage) in enumerate(stage_configs(config)):
        here = stage_folder(folder, index, name)
        if previous is not None:
            stage = stage.replace(init_from=str(previous if start == "run" else previous / f"{start}.pt"))
        state = read_state(here)
        if state is not None and state["step"] >= stage.total_steps:
            previous = here
            continue
        print(
            f"== stage {index + 1}/{len(config.stages)}: {name} ({stage.total_steps:,} steps) into {here}", flush=True
        )
        result = train(stage, out=here, resume=state is not None, progress=progress)
        if result.interrupted:  # continued by --resume on the recipe's folder
            result.out = folder
            return result
        previous = here
    assert previous is not None
    for name in ("best.pt", "latest.pt"):  # the recipe's bot, where a run's bot would be
        if (previous / name).exists():
            data = (previous / name).read_bytes()
            atomic_write(folder / name, lambda fh, data=data: fh.write(data), binary=True)
    if result is None:  # every stage was already finished
        result = train(stage, out=previous, resume=True, progress=progress)
    result.out = folder
    return result

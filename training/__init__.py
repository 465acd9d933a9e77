"""Self-play training for Revolution! with MaskablePPO (the ``train`` extra: torch, stable-baselines3,
sb3-contrib, tensorboard). This folder, ``training/``, installs as the package ``revolution_training``
(``pyproject.toml``'s ``package-dir``): ``import revolution_training.config`` reads ``training/config.py``.

::

    revolution train --config configs/default.yaml            # or: python -m revolution_training train --config ...
    revolution train --config configs/default.yaml --resume   # continue from the last save
    tensorboard --logdir runs/default/tb
    revolution eval --agents runs/default/best.pt value random   # a checkpoint is an agent spec

Modules, top to bottom: :mod:`.config` (``TrainConfig`` and its sections, YAML), :mod:`.selfplay` (the learner's
Gymnasium env), :mod:`.league` (snapshots on disk and opponent sampling), :mod:`.checkpoint` (the policy file
format), :mod:`.policy` (a checkpoint as an agent: ``load_policy_agent``), :mod:`.distributions` (a faster masked
MultiDiscrete distribution for ``MlpPolicy``), :mod:`.pretrain` (imitating a heuristic before PPO),
:mod:`.train` (the loop, saving, resuming, starting from trained weights), :mod:`.cli`.
"""

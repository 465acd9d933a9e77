"""Where agents meet games: the one game loop (:class:`~revolution_env.arena.runner.GameRunner`) and its batched
twin (``arena.batched``), the environments of a single learner, ``gym_env`` (``arena.single``) and
``vector_env`` (``arena.vector``, its step in ``arena.vector_base``), whose other seats are opponents
(``arena.opponents``), and pure self-play in batch, ``selfplay_vector_env`` (``arena.selfplay``), the vector env
with every seat the learner's."""

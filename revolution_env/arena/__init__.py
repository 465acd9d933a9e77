"""Where agents meet games: the one game loop (:class:`~revolution_env.arena.runner.GameRunner`) and its batched
twin (``arena.batched``), and the environments of a single learner, ``gym_env`` (``arena.single``) and
``vector_env`` (``arena.vector``), whose other seats are opponents (``arena.opponents``)."""

"""Front ends: the ways a person meets the game: ``terminal`` (``revolution play``) and ``web`` (``revolution
serve``: a replay viewer and games against the bots in a browser). They sit on top of every other layer and
nothing below imports them."""

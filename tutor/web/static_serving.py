"""Static files under any WSGI server (SPEC §10 Production): whitenoise."""

from __future__ import annotations

import os

from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """whitenoise serving the apps' own static directories (the finders), and
    ``STATIC_ROOT`` too once ``collectstatic`` has filled it. Without it, a
    missing ``STATIC_ROOT`` is the normal case, not a warning per start."""

    def add_files(self, root, prefix=None):
        is_static_root = self.static_root and os.path.abspath(root) == os.path.abspath(self.static_root)
        if is_static_root and not os.path.isdir(root):
            return
        super().add_files(root, prefix)

"""What every pytest test shares: the program cache is off.

A test compiles on purpose (some with a compiler function patched, which
the cache's key cannot see), and the suite must not fill the user's cache
directory; the program cache's own tests turn it on in a directory of
their own (``test_program_cache.py``).
"""

from __future__ import annotations

import os

from vdir.program_cache import ENABLE_ENV

os.environ[ENABLE_ENV] = "0"

"""Who administers the portal: staff and superusers see and act on everything, in every app.

Every access module (courses/access.py and the modules built on it) asks this one question the same way.
"""


def is_admin(user) -> bool:
    return bool(user.is_authenticated and user.is_active and (user.is_staff or user.is_superuser))

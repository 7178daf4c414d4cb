#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    from pathlib import Path

    from portal.env import load_dotenv

    # A developer checkout may keep settings in .env (git-ignored; `make venv` writes a DEBUG one).
    load_dotenv(Path(__file__).resolve().parent / ".env")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)

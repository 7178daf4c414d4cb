"""The <time> elements every page's times are written as (core/local_times.py), before the browser's script
(static/js/local_times.js) shows them in the viewer's zone; and the tag as any app's templates load it."""

from datetime import UTC, datetime

from django.template import engines

from core.local_times import local_time

MOMENT = datetime(2026, 11, 24, 6, 11, 32, 512_000, tzinfo=UTC)


def test_each_style_names_the_instant_in_utc_and_says_it_in_the_portal_s_zone_without_scripts(settings):
    settings.TIME_ZONE = "UTC"
    assert local_time(MOMENT) == (
        '<time datetime="2026-11-24T06:11:32Z" data-local-time="datetime">2026-11-24 06:11:32 UTC</time>'
    )
    assert local_time(MOMENT, "short").endswith('data-local-time="short">2026-11-24 06:11 UTC</time>')
    assert local_time(MOMENT, "time").endswith(">06:11:32</time>")
    assert local_time(None) == "—"


def test_any_app_s_template_loads_the_tag_by_its_own_name():
    page = engines["django"].from_string('{% load local_times %}{% local_time moment "short" %}')
    assert 'datetime="2026-11-24T06:11:32Z"' in page.render({"moment": MOMENT})

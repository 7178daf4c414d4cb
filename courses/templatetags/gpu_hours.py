"""{{ value|gpu_hours }}: GPU-hours written the one way (core.figures), on budgets, launch forms and dashboards."""

from django import template

from core import figures

register = template.Library()
register.filter("gpu_hours", figures.gpu_hours)

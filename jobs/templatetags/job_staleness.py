from django import template

from jobs.staleness import notices_for

register = template.Library()


@register.simple_tag
def stale_notices(jobs):
    """`{% stale_notices job_or_jobs as notices %}`: see jobs/staleness.py."""
    return notices_for(jobs or [])

"""The warning a page that offers a shell or files shows where every student's jobs share one identity
(clusters/isolation.py): {% shared_identity_notice "terminal" job=job %} for a job's terminal, JupyterLab or run
directory, {% shared_identity_notice "file space" cluster=cluster user=request.user %} for a user's own files."""

from django import template

from clusters.isolation import shared_by

register = template.Library()


@register.inclusion_tag("clusters/_shared_identity_notice.html")
def shared_identity_notice(place: str, *, job=None, cluster=None, user=None) -> dict:
    if job is not None:
        cluster = job.cluster
        words = shared_by(cluster, account=job.account or cluster.service_account(), course=job.course)
    else:
        words = shared_by(cluster, user=user)
    return {"place": place, "cluster": cluster, "shared_by": words}

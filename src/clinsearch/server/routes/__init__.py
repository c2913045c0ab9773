"""The API's routers, one per resource; ``create_app`` includes ``ROUTERS`` in this order."""

from __future__ import annotations

from clinsearch.server.routes import (
    audit_view,
    bundles,
    charts,
    cohort,
    explain,
    info,
    lists,
    page,
    patients,
    reports,
    review,
    saved,
    search,
    users,
)

ROUTERS = (page.router, info.router, search.router, cohort.router, reports.router,
           explain.router, users.router, bundles.router, lists.router, saved.router,
           patients.router, charts.router, audit_view.router, review.router)

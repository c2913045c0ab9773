"""The API's routers, one per resource; ``create_app`` includes ``ROUTERS`` in this order."""

from __future__ import annotations

from clinsearch.server.routes import cohort, explain, info, page, reports, search, users

ROUTERS = (page.router, info.router, search.router, cohort.router, reports.router,
           explain.router, users.router)

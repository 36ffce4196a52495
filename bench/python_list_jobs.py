"""python-gitlab's side of `npm run bench`: list every job of a project from the fixture server.

Usage: python3 python_list_jobs.py URL TOKEN PROJECT_ID
Prints one JSON line: {"import_ms", "list_ms", "count", "version"}. The parent times the whole process as well.
"""
import json
import sys
import time

started = time.perf_counter()
import gitlab  # noqa: E402  (timed on purpose)

imported = time.perf_counter()

url, token, project_id = sys.argv[1], sys.argv[2], int(sys.argv[3])
gl = gitlab.Gitlab(url, private_token=token)
list_started = time.perf_counter()
count = 0
for _job in gl.projects.get(project_id, lazy=True).jobs.list(iterator=True, per_page=100):
    count += 1
list_ended = time.perf_counter()
print(
    json.dumps(
        {
            "import_ms": (imported - started) * 1000,
            "list_ms": (list_ended - list_started) * 1000,
            "count": count,
            "version": gitlab.__version__,
        }
    )
)

# The curl block of seed 000 (shared/seeds/000_73cd677872d35844.txt, section "Worker API",
# from its first comment line to the heading "Worker API#"), copied verbatim so that
# tests/test_seed_curl.py runs without the shared folder next to the repository. When that
# folder is there, the test checks this copy still equals the seed's block. Do not edit
# below this header: re-copy the seed's block instead.

# Poll for a task
TASK=$(curl -s -X POST http://localhost:3001/workers/tasks/poll \
  -H "Content-Type: application/json" \
  -d '{ "handler_names": ["process_image"], "worker_id": "img-worker-1" }')

TASK_ID=$(echo $TASK | jq -r '.id')

# Complete the task
curl -X POST "http://localhost:3001/workers/tasks/$TASK_ID/complete" \
  -H "Content-Type: application/json" \
  -d '{ "output": { "url": "https://cdn.example.com/processed.png" } }'

# Or fail the task
curl -X POST "http://localhost:3001/workers/tasks/$TASK_ID/fail" \
  -H "Content-Type: application/json" \
  -d '{ "error": "Out of memory", "retryable": true }'

// Open derive jobs whose lease has run out (never started, or their runner stopped), oldest first.
// Parameters: $now (float, epoch seconds).
// Returns: id (str), group_id (str).
MATCH (j:DeriveJob)
WHERE j.state IN ['queued', 'running'] AND j.lease_until < $now
RETURN j.id AS id, j.group_id AS group_id
ORDER BY j.created_at

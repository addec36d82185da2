// Open a background derive job for one group, or find the one already open (one per group).
// Setting a property on the Group node first takes its write lock, so two concurrent calls
// are serialised and the second one finds the job the first one opened.
// Parameters: $group_id (str); $job_id (str, id of the job to create when none is open);
//   $now (str, ISO-8601 UTC).
// A group being erased (groups/fence_group) gets no job: erasing is true and nothing is created.
// Returns (no row for an unknown group): id (str, the open job; null when erasing), created (bool,
//   made by this call), erasing (bool).
MATCH (g:Group {id: $group_id})
SET g._LOCK_ = true
WITH g, g.erasing IS NOT NULL AS erasing
OPTIONAL MATCH (open:DeriveJob {group_id: $group_id})
  WHERE open.state IN ['queued', 'running']
WITH g, erasing, head(collect(open)) AS open,
     COUNT { MATCH (s:Segment {group_id: $group_id}) } AS segments
FOREACH (_ IN CASE WHEN open IS NULL AND NOT erasing THEN [1] ELSE [] END |
  CREATE (:DeriveJob {id: $job_id, group_id: $group_id, state: 'queued', created_at: $now,
                      updated_at: $now, finished_at: '', segments_before: segments, runs: 0,
                      runner: '', owner: '', lease_until: 0.0, rate_limited: 0, error: ''}))
REMOVE g._LOCK_
RETURN CASE WHEN erasing THEN null ELSE coalesce(open.id, $job_id) END AS id,
       open IS NULL AND NOT erasing AS created, erasing

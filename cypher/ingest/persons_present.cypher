// Which of some person ids a group still holds: a later batch of a load checks that the persons
// its first batch wrote were not erased meanwhile (graphmem forget; graphmem.verbatim.ingest).
// Parameters: $group_id (str); $ids (list[str], person ids).
// Returns: id (str), one row per id that names a stored Person of the group.
UNWIND $ids AS id
MATCH (p:Person {group_id: $group_id, id: id})
RETURN p.id AS id

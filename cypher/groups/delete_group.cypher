// Erase one group: every node of the group (messages, persons, sessions, derived records,
// Writer segments, with their relationships and index entries) and the Group node itself.
// Nothing of another group is touched. Idempotent.
// Parameters: $group_id (str).
// Returns: deleted (int, nodes deleted).
MATCH (n)
WHERE n.group_id = $group_id OR (n:Group AND n.id = $group_id)
WITH collect(n) AS doomed
FOREACH (n IN doomed | DETACH DELETE n)
RETURN size(doomed) AS deleted

// Erase step 5: delete the Person node itself (name, aliases, roster membership).
// Parameters: $group_id (str), $person_id (str).
// Returns: deleted (int, 0 or 1).
OPTIONAL MATCH (p:Person {group_id: $group_id, id: $person_id})
WITH collect(p) AS doomed
FOREACH (p IN doomed | DETACH DELETE p)
RETURN size(doomed) AS deleted

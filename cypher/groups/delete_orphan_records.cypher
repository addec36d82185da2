// Erase step 3: delete derived records of a group left without any supporting message
// (provenance is never empty; a record whose every FROM message was erased goes too).
// Parameters: $group_id (str).
// Returns: deleted (int).
MATCH (d:Derived {group_id: $group_id})
WHERE NOT (d)-[:FROM]->(:Message)
WITH collect(d) AS doomed
FOREACH (d IN doomed | DETACH DELETE d)
RETURN size(doomed) AS deleted

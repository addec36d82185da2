// Put a group's scope label on given messages of that group (new writes into a group that has
// its own vector index). Idempotent.
// Parameters: $group_id (str), $label (str, "GroupScope_<digits>"), $ids (list[str]).
// Returns: labelled (int).
UNWIND $ids AS mid
MATCH (m:Message {group_id: $group_id, id: mid})
USING INDEX m:Message(group_id, id)
SET m:$($label)
RETURN count(m) AS labelled

// Put a group's scope label on up to $batch of its messages that lack it (call until it
// returns fewer than $batch; idempotent).
// Parameters: $group_id (str), $label (str, "GroupScope_<digits>"), $batch (int).
// Returns: labelled (int, messages labelled by this call).
MATCH (m:Message {group_id: $group_id})
WHERE NOT $label IN labels(m)
WITH m LIMIT $batch
SET m:$($label)
RETURN count(m) AS labelled

// Erase step 0: Writer segments that covered one person's messages drop their stored validation
// report (it quotes the actions the Writer wrote from those messages); counts stay.
// Parameters: $group_id (str), $person_id (str), $note (str, JSON put in place of the report).
// Returns: redacted (int, segments changed).
MATCH (p:Person {group_id: $group_id, id: $person_id})
MATCH (s:Segment {group_id: $group_id})-[:COVERS]->(:Message {group_id: $group_id})-[:SOURCE]->(p)
WITH DISTINCT s
WHERE s.report IS NULL OR s.report <> $note
SET s.report = $note
RETURN count(s) AS redacted

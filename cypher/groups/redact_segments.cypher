// Erase step 0b: the named Writer segments drop their stored validation report (it quotes the
// actions they wrote, among them records erased for holding an erased person's words).
// Parameters: $group_id (str), $segment_ids (list[str]), $note (str, JSON put in place of the report).
// Returns: redacted (int, segments changed).
MATCH (s:Segment {group_id: $group_id})
WHERE s.id IN $segment_ids AND (s.report IS NULL OR s.report <> $note)
SET s.report = $note
RETURN count(s) AS redacted

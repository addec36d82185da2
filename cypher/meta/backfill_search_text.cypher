// Migration: give messages stored before `search_text` existed their fulltext document
// (from the older `context` property when present). Idempotent.
// Parameters: none. Returns: updated (int).
MATCH (m:Message)
WHERE m.search_text IS NULL
SET m.search_text = CASE WHEN m.context IS NULL THEN m.speaker + ': ' + m.text
                         ELSE m.context + ' ' + m.text END
REMOVE m.context
RETURN count(m) AS updated

// Every fulltext document of one group (for group-local term statistics).
// Messages without a document (no visible text: attachment-only, blank) are not counted.
// Parameters: $group_id (str). Returns: doc (str, the message's search_text).
MATCH (m:Message {group_id: $group_id})
WHERE m.search_text IS NOT NULL AND m.search_text <> ''
RETURN m.search_text AS doc

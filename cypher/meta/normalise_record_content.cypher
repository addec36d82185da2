// Migration: put the content of derived records written before it was stored in NFC
// (graphmem.core.text.search_form; the Writer's words, indexed by `derived_content`) into NFC,
// $batch at a time. Idempotent; call until it returns fewer than $batch.
// Parameters: $batch (int).
// Returns: updated (int).
MATCH (d:Derived)
WHERE d.content IS NOT NULL AND NOT d.content IS NFC NORMALIZED
WITH d LIMIT $batch
SET d.content = normalize(d.content, NFC)
RETURN count(d) AS updated

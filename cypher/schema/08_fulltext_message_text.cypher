// Fulltext (Lucene, english analyzer: stemming + stop words) over each message's retrieval
// document: its previous turn and "speaker: text" (see graphmem.verbatim.ingest.search_text), the
// character bigrams of its unspaced-script runs (Chinese, Japanese, Korean, Thai, ...), spelt as
// digit tokens that the analyzer keeps whole (`search_grams`, graphmem.core.text.gram_field;
// absent when there are none), and its group's token `group_key` (graphmem.store.scope), so a
// query can be confined to one group. A change of the property list is migrated by
// graphmem.store.schema (drop + recreate). Parameters: none. Returns nothing.
CREATE FULLTEXT INDEX message_text IF NOT EXISTS FOR (m:Message) ON EACH [m.search_text, m.group_key, m.search_grams]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english', `fulltext.eventually_consistent`: false}}

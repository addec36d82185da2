// Fulltext (Lucene, english analyzer: stemming + stop words) over each message's retrieval
// document: its previous turn and "speaker: text" (see graphmem.verbatim.ingest.search_text), and its
// group's token `group_key` (graphmem.store.scope), so a query can be confined to one group.
// Parameters: none. Returns nothing.
CREATE FULLTEXT INDEX message_text IF NOT EXISTS FOR (m:Message) ON EACH [m.search_text, m.group_key]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english', `fulltext.eventually_consistent`: false}}

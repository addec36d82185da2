// Fulltext (english analyzer) over derived record content, and the character bigrams of its
// unspaced-script runs (`content_grams`, graphmem.core.text.gram_field; absent when none), as for
// messages (08_fulltext_message_text). Parameters: none.
CREATE FULLTEXT INDEX derived_content IF NOT EXISTS FOR (d:Derived) ON EACH [d.content, d.content_grams]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english', `fulltext.eventually_consistent`: false}}

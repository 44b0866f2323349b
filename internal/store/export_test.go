package store

import "context"

// TurnTextOf is the text the store indexes a turn body by when its writer
// gives none, for the external tests to hold chat.SearchText to.
func TurnTextOf(s *Store, body string) (string, error) {
	var text string
	err := s.db.pool.QueryRowContext(context.Background(), `SELECT `+turnTextSQL("?1"), body).Scan(&text)
	return text, err
}

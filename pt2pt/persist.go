package pt2pt

// CheckSend reports the error a send of m to dest with tag would fail
// with before starting anything (nil when it would start): package mpi's
// persistent sends check their arguments once, at set-up.
func (c *Comm) CheckSend(name string, m Mem, dest, tag int) error {
	return c.checkSend(name, m, dest, tag, c.ctx)
}

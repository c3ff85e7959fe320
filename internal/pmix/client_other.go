//go:build !cgo || !linux

package pmix

import "fmt"

// Client is this process's PMIx session; without cgo there is none.
type Client struct{}

// Init always fails here: loading libpmix needs cgo on Linux.
func Init(getenv func(string) string) (*Client, error) {
	return nil, fmt.Errorf("%w: this binary was built without cgo", ErrNoLibrary)
}

// Library is the libpmix Init loaded: none here.
func Library() string { return "" }

func (c *Client) Rank() int                            { return 0 }
func (c *Client) Namespace() string                    { return "" }
func (c *Client) GetUint(int, string) (uint64, error)  { return 0, ErrNoLibrary }
func (c *Client) Put(string, []byte) error             { return ErrNoLibrary }
func (c *Client) Commit() error                        { return ErrNoLibrary }
func (c *Client) Fence(bool) error                     { return ErrNoLibrary }
func (c *Client) GetBytes(int, string) ([]byte, error) { return nil, ErrNoLibrary }
func (c *Client) Finalize() error                      { return nil }
func (c *Client) Abort(int, string) error              { return ErrNoLibrary }

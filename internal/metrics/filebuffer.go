package metrics

// fileBufferFunc reports the spool's pending and failed records.
type fileBufferFunc func() (pending, failed int)

// SetFileBuffer makes the queen_file_buffer_* gauges report f's figures (nil: zero).
func (c *Collector) SetFileBuffer(f func() (pending, failed int)) {
	if f == nil {
		c.fileBuf.Store(nil)
		return
	}
	ff := fileBufferFunc(f)
	c.fileBuf.Store(&ff)
}

// fileBuffer is the spool's figures, zero without one.
func (c *Collector) fileBuffer() (pending, failed int) {
	f := c.fileBuf.Load()
	if f == nil {
		return 0, 0
	}
	return (*f)()
}

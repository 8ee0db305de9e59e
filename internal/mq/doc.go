// Package mq is the vocabulary every layer of queen-go speaks: messages, push, pop, ack and
// transaction items and results, statuses, queue options (one table), the read models of the
// admin routes, and the error catalogue. It is a leaf: it imports nothing of queen-go, so the
// wire layer, the data path, the read side and the store share these names without importing
// one another (River's rivertype plays the same part).
package mq

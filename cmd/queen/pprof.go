package main

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
)

// servePprof serves Go's profiling endpoints on their own listener (PPROF_ADDR), never on the
// API port: profiles expose internals, so they stay where the operator put them (loopback).
func servePprof(addr string, log *slog.Logger) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() {
		log.Info("serving Go profiling", "addr", addr)
		if err := http.ListenAndServe(addr, mux); err != nil {
			log.Error("profiling listener stopped", "addr", addr, "err", err)
		}
	}()
}

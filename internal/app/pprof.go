package app

import (
	"context"
	"net"
	"net/http"
	"net/http/pprof"
)

// servePprof serves Go's profiling endpoints on their own listener (PPROF_ADDR), never on the
// API port: profiles expose internals, so they stay where the operator put them (loopback).
// A listener that cannot be bound is logged, not fatal: profiling is a diagnostic aid.
func (a *App) servePprof() {
	if a.cfg.PprofAddr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", a.cfg.PprofAddr)
	if err != nil {
		a.Logger().Error("profiling listener stopped", "addr", a.cfg.PprofAddr, "err", err)
		return
	}
	a.pprof = &http.Server{Handler: mux}
	a.Logger().Info("serving Go profiling", "addr", a.cfg.PprofAddr)
	a.Go(func(context.Context) { _ = a.pprof.Serve(ln) })
}

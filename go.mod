module github.com/gprof-dev/gprof

go 1.26.8

require (
	github.com/cilium/ebpf v0.22.0
	github.com/ebitengine/purego v0.11.3
	github.com/go-delve/delve v1.27.2
	github.com/goccy/go-json v0.12.0
	github.com/google/pprof v0.0.0-20261016150608-1facf8f91b50
	github.com/ianlancetaylor/demangle v0.0.0-20260724033716-83e58baca724
	github.com/klauspost/compress v1.20.3
	github.com/urfave/cli/v2 v2.27.7
	golang.org/x/arch v0.28.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
)

require (
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
)

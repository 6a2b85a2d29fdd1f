// Command gohang hangs, for gprof dump: its main goroutine (locked to the
// main thread) waits for a lock it already holds, one goroutine locked to
// a thread of its own spins, one waits on a channel nobody sends on. It
// prints "ready" once they run.
package main

import (
	"fmt"
	"os"
	"runtime"
	"sync"
)

var sink uint64

//go:noinline
func spinForever(started chan<- bool) {
	started <- true
	for {
		sink = sink*3 + 1 // spins here
	}
}

//go:noinline
func waitOnChannel(ch chan int) {
	<-ch // hangs here
}

//go:noinline
func lockTwice(mu *sync.Mutex) {
	mu.Lock()
	mu.Lock() // hangs here
}

func main() {
	runtime.LockOSThread()
	started := make(chan bool)
	go func() {
		runtime.LockOSThread()
		spinForever(started)
	}()
	<-started
	go waitOnChannel(make(chan int))
	fmt.Println("ready")
	os.Stdout.Sync()
	var mu sync.Mutex
	lockTwice(&mu)
}

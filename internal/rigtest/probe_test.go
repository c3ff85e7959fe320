package rigtest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"time"
)

// probeListen accepts one connection, reads a line and answers it with this
// node's hostname and the address the connection came from.
func probeListen() int {
	l, err := net.Listen("tcp4", ":0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		return 1
	}
	defer l.Close()
	fmt.Printf("ready %d\n", l.Addr().(*net.TCPAddr).Port)
	l.(*net.TCPListener).SetDeadline(time.Now().Add(20 * time.Second))
	c, err := l.Accept()
	if err != nil {
		fmt.Fprintln(os.Stderr, "accept:", err)
		return 1
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "read:", err)
		return 1
	}
	host, _ := os.Hostname()
	peer := c.RemoteAddr().(*net.TCPAddr).IP
	_, err = fmt.Fprintf(c, "%s answered by %s, seen from %s\n", line[:len(line)-1], host, peer)
	if err != nil {
		fmt.Fprintln(os.Stderr, "write:", err)
		return 1
	}
	return 0
}

// probeDial sends this node's hostname to addr and prints the answer.
func probeDial(addr string) int {
	c, err := net.DialTimeout("tcp4", addr, 10*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		return 1
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	host, _ := os.Hostname()
	if _, err := fmt.Fprintln(c, host); err != nil {
		fmt.Fprintln(os.Stderr, "write:", err)
		return 1
	}
	answer, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "read:", err)
		return 1
	}
	fmt.Print(answer)
	return 0
}

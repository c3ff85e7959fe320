package launcher

import (
	"fmt"
	"net"
	"strings"
)

// listenIP picks the address the wire-up store listens on for a job with
// ranks on other hosts. iface names an interface (its first address,
// IPv4 first) or a network in CIDR form (this host's address inside it);
// empty means the source address of this host's route toward remote, found
// by "dialling" UDP, which sends nothing.
func listenIP(iface, remote string) (string, error) {
	switch {
	case strings.Contains(iface, "/"):
		_, network, err := net.ParseCIDR(iface)
		if err != nil {
			return "", fmt.Errorf("--iface %s: %w", iface, err)
		}
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return "", fmt.Errorf("--iface %s: %w", iface, err)
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && network.Contains(ipn.IP) {
				return ipn.IP.String(), nil
			}
		}
		return "", fmt.Errorf("--iface %s: no address of this host is in that network", iface)
	case iface != "":
		ifi, err := net.InterfaceByName(iface)
		if err != nil {
			return "", fmt.Errorf("--iface %s: %w", iface, err)
		}
		addrs, err := ifi.Addrs()
		if err != nil {
			return "", fmt.Errorf("--iface %s: %w", iface, err)
		}
		var v6 string
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			switch {
			case !ok || ipn.IP.IsLinkLocalUnicast():
			case ipn.IP.To4() != nil:
				return ipn.IP.String(), nil
			case v6 == "":
				v6 = ipn.IP.String()
			}
		}
		if v6 == "" {
			return "", fmt.Errorf("--iface %s has no address", iface)
		}
		return v6, nil
	}
	c, err := net.Dial("udp", net.JoinHostPort(remote, "9"))
	if err != nil {
		return "", fmt.Errorf("cannot find this host's address toward %s for the wire-up store (%v); name one with --iface", remote, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
}

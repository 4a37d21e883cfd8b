package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// clientCerts are the identities the test control plane's clients use: the components as the
// RBAC bootstrap policy names them, and an administrator in system:masters.
var clientCerts = []struct{ file, user, group string }{
	{"admin", "gpudra-test-admin", "system:masters"},
	{"kube-scheduler", "system:kube-scheduler", ""},
	{"kube-controller-manager", "system:kube-controller-manager", ""},
}

// runCerts writes a throw-away PKI into the directory given: ca, apiserver serving certificate
// for 127.0.0.1, the client certificates above, and the service-account signing key (sa.key,
// sa.pub). Valid for two days; nothing outside a test session should trust it.
func runCerts() int {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: controlplane certs DIR")
		return 2
	}
	if err := writePKI(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "certs:", err)
		return 1
	}
	return 0
}

func writePKI(dir string) error {
	caKey, err := newKey(dir, "ca")
	if err != nil {
		return err
	}
	caTemplate := template("gpudra-test-ca", "")
	caTemplate.IsCA, caTemplate.BasicConstraintsValid = true, true
	caTemplate.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writePEM(dir, "ca.crt", "CERTIFICATE", caDER); err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}

	server := template("kube-apiserver", "")
	server.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	server.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}
	server.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default",
		"kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	if err := signLeaf(dir, "apiserver", server, ca, caKey); err != nil {
		return err
	}
	for _, c := range clientCerts {
		leaf := template(c.user, c.group)
		leaf.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		if err := signLeaf(dir, c.file, leaf, ca, caKey); err != nil {
			return err
		}
	}

	saKey, err := newKey(dir, "sa")
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	return writePEM(dir, "sa.pub", "PUBLIC KEY", saPub)
}

func template(commonName, group string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	subject := pkix.Name{CommonName: commonName}
	if group != "" {
		subject.Organization = []string{group}
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial, Subject: subject,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
}

func signLeaf(dir, name string, leaf, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := newKey(dir, name)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	return writePEM(dir, name+".crt", "CERTIFICATE", der)
}

func newKey(dir, name string) (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return key, writePEM(dir, name+".key", "EC PRIVATE KEY", der)
}

func writePEM(dir, name, kind string, der []byte) error {
	return os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

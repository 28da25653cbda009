package objstoretest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"
)

// createContainer creates a container in Azurite (whose containers, unlike
// the other servers' buckets, are not directories to make): Create
// Container, signed with the development account's Shared Key.
func createContainer(addr, name string) error {
	date := time.Now().UTC().Format(http.TimeFormat)
	req, err := http.NewRequest("PUT", "http://"+addr+"/devstoreaccount1/"+name+"?restype=container", nil)
	if err != nil {
		return err
	}
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2021-08-06")
	toSign := "PUT\n\n\n\n\n\n\n\n\n\n\n\n" + "x-ms-date:" + date + "\nx-ms-version:2021-08-06\n" +
		"/devstoreaccount1/devstoreaccount1/" + name + "\nrestype:container"
	key, _ := base64.StdEncoding.DecodeString(azuriteKey)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(toSign))
	req.Header.Set("Authorization", "SharedKey devstoreaccount1:"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("Create Container: %s", resp.Status)
	}
	return nil
}

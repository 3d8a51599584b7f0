package sandbox

// FontsConf is the sandbox's own fontconfig configuration, which the
// backends that write the sandbox's /etc (native, bwrap) put at
// /etc/fonts/fonts.conf: the system's fonts, and the cache in TmpDir.
// Without a configuration every program that asks fontconfig for the
// fonts (matplotlib does, through fc-list) prints "Fontconfig error:
// Cannot load default config file"; the host's would name no directory
// the sandbox can write but $HOME, the workspace, whose files are the
// program's results.
const FontsConf = `<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
	<dir>/usr/share/fonts</dir>
	<dir>/usr/local/share/fonts</dir>
	<cachedir>` + TmpDir + `/.fontconfig</cachedir>
</fontconfig>
`

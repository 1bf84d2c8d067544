r"""The words and shapes our own recognizers look for (`recognizers`), apart from Presidio: the finder's
gate (`finder`) is made of them too, and a process that finds nothing to look at never imports Presidio.

Expressions are in the syntax both the `regex` module and Hyperscan read (PCRE's: `\p{Lu}` is a capital
in any script).
"""

from __future__ import annotations

import re

__all__ = [
    "ACCESS_LOG_TIME",
    "ACCOUNT_COMMAND",
    "ACCOUNT_KEY",
    "ACCOUNT_ROLE",
    "ADDRESS_CUE",
    "ADDRESS_GATE",
    "ADDRESS_JOIN",
    "AD_USER_COMMAND",
    "AFTER_ROLE",
    "ASKED_WHO",
    "ASSIGNED_PEOPLE",
    "AT_HOST",
    "AUTH_LOG_USER",
    "BIRTH_CUE",
    "BLAME",
    "CAPITALS_FIELD",
    "CAPITALS_HONORIFIC",
    "CAPITALS_NAME",
    "CHOWN",
    "CLOSING",
    "COMMAND_START",
    "COMMON_NAME",
    "DATE",
    "DEVICE",
    "DEVICE_OWNER",
    "DIALLED",
    "DN_FAMILY_FIRST",
    "FAMILY_FIRST",
    "FIELD",
    "FILE_MODE",
    "FILLED_WITH",
    "FILL_CALL",
    "GERMANIC_STREETS",
    "GITCONFIG_USER",
    "GIT_IDENTITY",
    "GREETING",
    "HONORIFIC",
    "HOUSE",
    "ID_UID",
    "INTRO",
    "INTRO_TWO",
    "KEY_FINGERPRINT",
    "LABELLED_VALUES",
    "LABELS",
    "LABEL_JOIN",
    "LDAP_NEXT",
    "LDAP_UID",
    "LOGGED_IN",
    "LOGIN_COMMAND",
    "LOGIN_OPTION",
    "LOGIN_VARIABLE",
    "LOG_FIELD_USER",
    "LOWER_TITLE",
    "MONTH",
    "NAME",
    "NAME_BOX",
    "NAME_FIELD",
    "NAME_TWO",
    "NOT_A_USER",
    "NOT_NAMES",
    "OPEN_FILE",
    "ORGANISATION_WORDS",
    "PERSON_ROLE",
    "PLACEHOLDER_USER",
    "PROCESS_OWNER",
    "PROMPT_HOST",
    "RELATION",
    "ROLE",
    "ROLE_ACCOUNT_KEY",
    "ROLE_HANDLE",
    "RUN_AS_OPTION",
    "SERVICE_USER",
    "SESSION_TTY",
    "SHELL_PROMPT",
    "SIGNATURE",
    "SSH_CONFIG_USER",
    "SSH_KEY_COMMENT",
    "STAT_UID",
    "STREET_NAME_WORD",
    "STREET_WORDS_EN",
    "STREET_WORDS_OTHER",
    "SWITCH_USER",
    "TYPED_INTO",
    "URL_ACCOUNT",
    "URL_DOMAIN",
    "URL_PASSWORD_AT",
    "VCARD_FN",
    "VCARD_N",
    "WHO_COMMAND",
]

#: a name's word: a capital, then letters (accents included), an inner hyphen or apostrophe allowed
#: (one capital: `UniqueAddressHeader` is an identifier, `McDonald`, `O'Brien` and `DeLuca` are names)
_WORD = r"(?:Mc|Mac|O['’]|D['’]|De|Di|Le|La)?\p{Lu}\p{Ll}+(?:['’]\p{Ll}+)?(?:-\p{Lu}\p{Ll}+)?"
_PARTICLE = r"(?:van|von|der|de|da|del|della|di|du|la|le|dos|das|bin|al|ten|ter)"
#: titles written in lower case before a name (`pan Adam Jonik`)
LOWER_TITLE = r"(?:pan|pani|dhr|mevr|sig|don|doña)"
_TITLE = (
    rf"(?:(?:Dr|Prof|Ing|Mag|Dipl|Mr|Mrs|Ms|Mx|Sr|Sra|Dott|Univ|{LOWER_TITLE})\.?"
    r"(?:-\p{Lu}\p{Ll}+\.?)?[ \t]+)"
)
#: a middle name's initial (`Nathaniel J. Smith`)
_INITIAL = r"\p{Lu}\.[ \t]+"
_DEGREE = r"(?:,?[ \t]+(?:MBA|PhD|MSc|BSc|B\.Sc|M\.Sc|MD|Jr|Sr|II|III|IV|B\.A|M\.A|B\.Eng|M\.Eng|LL\.M)\.?)"


def _name(least: int) -> str:
    """A name of `least` + 1 to four words on one line, with the initials and particles between them,
    after a title and before a degree ("Ing. Domenico Speer MBA.", "Roland de la Bazin", "Jane Q. Doe")."""
    words = rf"(?:[ \t]+(?:{_INITIAL}|{_PARTICLE}[ \t]+){{0,2}}{_WORD}){{{least},3}}"
    return rf"{_TITLE}{{0,2}}{_WORD}{words}{_DEGREE}{{0,2}}"


#: a name of one to four words
NAME = _name(0)
#: a name written family name first, after a comma (`Müller, Hans`): one word before it, so a title after
#: a name ("Rui Costa, Senior Engineer") is not one
FAMILY_FIRST = rf"{_WORD},[ \t]*{NAME}"
#: a directory's common name, up to the name: an LDAP or Active Directory entry's (`CN=Jane Doe,OU=…`,
#: `CN=Doe\, Jane,…`), a calendar invitation's attendee (`ATTENDEE;CN=Jane Doe:mailto:…`), a
#: certificate's subject (`CN = Jane Doe, emailAddress = …`)
COMMON_NAME = r"(?<![\w-])(?i:cn)[ \t]*=[ \t]*\"?"
#: …its name written family name first, the comma escaped as a DN escapes it
DN_FAMILY_FIRST = rf"{_WORD}\\,[ \t]*{NAME}"
#: a vCard's name properties, up to the value: its formatted name (`FN:Jane Doe`), and its structured
#: name, family name first (`N:Doe;Jane;;;`)
VCARD_FN = r"(?:^|\n)FN(?:;[^:\n]{0,80})?:"
VCARD_N = r"(?:^|\n)N(?:;[^:\n]{0,80})?:"
#: an LDAP entry's account (`uid=jdoe,ou=people,dc=…`), up to it
LDAP_UID = r"(?<![\w.-])(?i:uid)="
LDAP_NEXT = r",(?i:ou|dc|cn|o)="
#: a name of two words or more
NAME_TWO = _name(1)
#: capitalised words that follow a cue without being a name ("I'm Sorry", "Hi Team,", "Dear Customer",
#: a tool's `"name": "Search Web"`, a title after a name: "Name: Jane Doe, Senior Engineer", a program's
#: "Hello World!", an assistant's "Hey Siri", a button's accessible name: `{ name: 'Sign In' }`, a CI
#: or Ansible step's `- name: Set Up Python`, a document's or a list's beside its address: `Getting
#: Started <docs@…>`, `lists@… (Mailing List)`)
_NOT_NAME_WORDS = """
    please sorry happy glad not here just looking going still so really also back new sure afraid fine good
    great ok okay trying writing calling reaching having working interested available unable able
    the a an this that your our my his her their all everyone everybody team there folks guys friends
    friend sir madam madame customer customers client support sales admin user users hello hi hey dear
    thanks thank regards best cheers sincerely yours morning afternoon evening monday tuesday wednesday
    thursday friday saturday sunday january february march april may june july august september
    october november december mr mrs ms dr prof assistant agent bot eliza human system model
    none true false null nil self cls default unknown anonymous test example string object
    search get send create list fetch read write update delete run find open check add remove query
    senior junior head lead chief principal staff manager engineer director founder president vice
    ceo cto cfo coo vp world universe earth python java rust claude chatgpt gpt gemini copilot siri
    alexa cortana bard llama mistral optional required mandatory missing empty invalid blank
    today tonight tomorrow yesterday apple someone somebody anyone anybody nobody mom dad mum
    sign log submit continue save cancel confirm accept decline reset upload download next previous
    build checkout set setup install deploy configure cache publish push pull lint format compile
    release tag bump generate prepare verify validate notify clean restore archive package sync wait
    start stop restart enable disable apply init initialize copy move use load export import print
    show ensure extract unpack authenticate upgrade schedule trigger migrate seed backup
    getting mailing
"""
NOT_NAMES = frozenset(_NOT_NAME_WORDS.split())
#: words that make capitalised words a group's or a program's name, not a person's ("Platform Team",
#: "Python Software Foundation <psf@…>", "Acme Labs", a tracker's "Bug Watch Updater", a directory's
#: "Domain Admins" and "Remote Desktop Users", a job's or a dashboard's "Docker Image", "Monthly Report";
#: none a surname)
_ORGANISATION_WORDS = """
    team teams foundation group inc ltd llc gmbh corp corporation company project developers community
    bot bots service services labs lab university department association society committee council
    office desk center centre organization organisation importer updater watcher robot daemon
    scheduler notifier admins administrators users operators computers controllers guests servers
    server docker image images container containers cluster database repository repo tests coverage
    dependencies artifacts pipeline workflow dashboard report reports api app application frontend
    backend toolchain environment node nodes
"""
ORGANISATION_WORDS = frozenset(_ORGANISATION_WORDS.split())

#: a home folder's name that is no one's: system, service and CI accounts, shared folders, the
#: generic words a container's or a tutorial's account is named by, Active Directory's built-in groups
#: and accounts (`sAMAccountName` names groups too), and the types and values a schema writes under an
#: account's key (`username: str`, `"login": "null"`) (a user's name is also redacted
#: wherever else the trajectory says it as a word: `Pseudonyms.spread`)
_NOT_A_USER = """
    root admin administrator user users username guest nobody shared public default defaultapppool
    runner ubuntu debian centos fedora alpine ec2-user azureuser vagrant pi linuxbrew node app apps
    www-data git build builder buildkite ci circleci jenkins travis gitlab gitlab-runner docker
    codespace codespaces vscode gitpod coder jovyan sandbox agent runneradmin dev developer devuser
    test tests tester work code data home temp tmp src project projects workspace workspaces repo repos
    me you your yourname your-name your_name yourusername your-username your_username name example
    john.doe jane.doe foo bar baz docs deploy deployer ansible terraform ops devops core opc bitnami
    postgres mysql oracle sa dagster backup sftp ftp www web service svc system operator cloud-user automation
    bot github-actions
    x-access-token x-token-auth x-oauth-basic oauth oauth2 gitlab-ci-token token api apikey elastic
    rabbitmq minioadmin redis userid myuser myusername dbuser db_user neo4j mongo mongodb
    str string text bool true false null none undefined sub email int any object anonymous unknown
    current self other new unassigned everyone staff tbd pending
    administrators guests replicator dnsadmins dnsupdateproxy krbtgt iis_iusrs
"""
NOT_A_USER = frozenset(_NOT_A_USER.split()) | {"all users", "default user"}
#: an SSH public key up to its comment (`ssh-ed25519 AAAA… `), which names the account that made it
SSH_KEY_COMMENT = (
    r"\b(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com)[ \t]+"
    r"AAAA[A-Za-z0-9+/]{16,}={0,3}[ \t]+"
)
#: what a CLI says the account it is logged in with is (`gh auth status`: `Logged in to github.com
#: account jdoe`, `… as jdoe`), up to the account; prose's "logged in as the admin" is not this
LOGGED_IN = r"\bLogged[ \t]+in[ \t]+to[ \t]+[\w.-]+\.[a-z]{2,}[ \t]+(?:as|account)[ \t]+"
#: a command that logs in to a host, up to the `account@host` it names (`ssh -i key jdoe@10.0.0.5`)
LOGIN_COMMAND = r"\b(?:ssh|scp|sftp|rsync|mosh|ssh-copy-id)\b[^\n|;&]{0,200}?"
#: a shell's prompt after its `account@host`: bash's (`jdoe@host:~/src$`), zsh's on a Mac (`jdoe@Host ~
#: %`), Red Hat's (`[jdoe@host src]$`), Git Bash's (`jdoe@HOST MINGW64 ~/src`): how a pasted terminal
#: starts each command
PROMPT_HOST = r"[\w-]+(?:\.[\w-]+)*"
SHELL_PROMPT = (
    r"(?::[~/][^\s$#]*[$#]|[ \t]+(?:~|[\w.-]+)[ \t]+%|[ \t]+(?:~|[\w.~/-]+)\][$#]|"
    r"[ \t]+(?:MINGW(?:32|64)|MSYS|UCRT64|CLANG64)\b)(?=[ \t]|$)"
)
#: a file's mode as `ls -l` writes it before the file's links, owner and group (`-rw-r--r--@  1 jdoe
#: staff`), up to the owner
FILE_MODE = r"[-dlcbps][-r][-w][-xsS][-r][-w][-xsS][-r][-w][-xtT][@+.]?[ \t]+\d+[ \t]+"
#: a field holding an account's name: GitHub's API (`"login": "jdoe"`, in every pull request's, issue's
#: and commit's `user` and `author`), a form's or a config's `username`, Twitter's `screen_name`, a
#: profile's `github_username`, Active Directory's `sAMAccountName` (LDIF, PowerShell's `Get-ADUser`)
ACCOUNT_KEY = (
    r"(?i:(?:twitter|github|gitlab|slack|discord|telegram|instagram|tiktok|reddit|linkedin|mastodon)[ _-]?)?"
    r"(?i:login|user[ _]?name|screen[ _]?name|sam[ _]?account[ _]?name)"
)
#: PowerShell's Active Directory commands, up to the account they are given (`Get-ADUser -Identity jdoe`,
#: `Set-ADUser jdoe`)
AD_USER_COMMAND = r"\b(?i:(?:get|set|remove|enable|disable|unlock)-aduser)[ \t]+(?:(?i:-identity)[ \t]+)?"
#: a chat's display name given as a handle (Slack's and Discord's `"display_name": "jdoe"`, a line's
#: `display_name: jdoe`), up to it; one given in words is a person's name (`NAME_FIELD`)
HANDLE_DISPLAY_NAME = r"(?:[\"']display[_ ]?name[\"']|^[ \t]*display[_ ]?name)[ \t]*:[ \t]*[\"']?"
#: the environment's variables holding the account a process runs as (`env`'s `USER=jdoe`, a tool's
#: `{"USER": "jdoe"}`), or the person a CI run is for, up to the value
LOGIN_VARIABLE = (
    r"\b(?:USER|LOGNAME|USERNAME|SUDO_USER|GITHUB_ACTOR|GITLAB_USER_LOGIN)(?:=[\"']?|[\"'][ \t]*:[ \t]*[\"'])"
)
#: a device's default name, which holds its owner's (`Jane's MacBook Pro`; as a host, where the
#: apostrophe is dropped, `Janes-MacBook-Pro.local`, `Jane-Does-iPhone`): the words after the owner
DEVICE = r"(?:MacBook|iMac|Mac[ \t-]?(?:mini|Pro|Studio)|MBP|iPhone|iPad)"
#: the owner's name before them: one or two capitalised words
DEVICE_OWNER = rf"{_WORD}(?:[ \t-]{_WORD})?"
#: a process listing's or a file's owner column where system tools print one: `ps aux`'s USER before
#: its PID, %CPU, %MEM, VSZ and RSS; `lsof`'s USER between the PID and the descriptor; `stat`'s `Uid:
#: (  501/   jdoe)`; `ssh-add -l`'s key comment after the fingerprint
PROCESS_OWNER = r"[ \t]+\d+[ \t]+\d+\.\d[ \t]+\d+\.\d[ \t]+\d+[ \t]+\d+[ \t]"
#: a login session's terminal after its account, as `who`, `w` and `last` list them (`jdoe  pts/0 …`)
SESSION_TTY = r"[ \t]+(?:pts/\d+|tty[a-z]?\d+)[ \t]+"
#: the time of a request in a web server's access log (the Common and Combined Log Formats), after the
#: authenticated account (`203.0.113.9 - jdoe [10/Oct/2026:13:55:36 -0700] "GET …`)
ACCESS_LOG_TIME = r"[ \t]+\[\d{1,2}/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d[ \t]*[+-]\d{4}\]"
OPEN_FILE = r"[ \t]+(?:\d+[urwW]|cwd|txt|mem|rtd)[ \t]+(?:IPv[46]|REG|DIR|CHR|unix|PIPE|FIFO|KQUEUE|sock)\b"
#: an authentication log's account, as sshd and PAM write one to `auth.log` and the journal, up to it:
#: `Accepted publickey for jdoe from …`, `Failed password for invalid user jdoe from …`, `Invalid user
#: jdoe from …`, `session opened for user jdoe(uid=1000) by …`
AUTH_LOG_USER = (
    r"\b(?:(?:Accepted|Failed|Postponed)[ \t]+(?:password|publickey|keyboard-interactive(?:/pam)?|hostbased|"
    r"gssapi-with-mic|none)[ \t]+for[ \t]+(?:invalid[ \t]+user[ \t]+)?|Invalid[ \t]+user[ \t]+|"
    r"(?:authenticating|invalid)[ \t]+user[ \t]+|session[ \t]+(?:opened|closed)[ \t]+for[ \t]+user[ \t]+)"
)
#: an account as a structured log's field (logfmt's `level=info user=jdoe msg=…`) or a URL's query
#: (`/api/items?user=jdoe&page=2`), up to the value; a lone `user=` (code's keyword argument) is not
LOG_FIELD_USER = r"(?i:user(?:[_-]?name)?|login)="
#: an SSH config's host block up to its `User` (`Host prod` / `  HostName …` / `  User jdoe`): within three
#: lines after the host's or another of the config's keywords, so a window around `User` holds one
SSH_CONFIG_USER = (
    r"(?:^|\n)[ \t]*(?:Host(?:Name)?|Port|Identit(?:yFile|iesOnly)|ForwardAgent|Proxy(?:Jump|Command)|"
    r"AddKeysToAgent|UseKeychain|ServerAlive(?:Interval|CountMax)|StrictHostKeyChecking|UserKnownHostsFile|"
    r"(?:Local|Remote|Dynamic)Forward|Control(?:Master|Path|Persist)|PreferredAuthentications|LogLevel)"
    r"[ \t]+[^\n]+(?:\n[ \t]*[A-Z]\w+[ \t]+[^\n]+){0,3}\n[ \t]*User[ \t]+"
)
#: the lead of `stat`'s owner (`Uid: (  501/   jdoe)`), `id`'s (`uid=501(jdoe)`) and `ssh-add -l`'s key
#: comment (`256 SHA256:… jdoe@laptop`), up to the account
STAT_UID = r"\bUid:[ \t]*\([ \t]*\d+/[ \t]*"
ID_UID = r"\buid=\d+\("
KEY_FINGERPRINT = r"\bSHA256:[A-Za-z0-9+/]{40,44}[ \t]+"
#: a command that prints the account it runs as (`whoami`, `npm whoami`, `id -un`, `echo $USER`)
WHO_COMMAND = r"(?:whoami|npm[ \t]+whoami|id[ \t]+-un|echo[ \t]+\$\{?(?:USER|LOGNAME)\}?|logname)"
#: such a command on a transcript's line of its own (PowerShell's `PS C:\\> whoami` too), up to its
#: answer on the next line
ASKED_WHO = (
    r"(?:^|\n)[ \t]*(?:[$#%>][ \t]*|PS[ \t][^\n>]{0,80}>[ \t]*)?"
    rf"{WHO_COMMAND}[ \t]*\r?\n[ \t]*(?:[\w-]+\\)?"
)
#: a database client's, a registry login's or a download's user option, up to the account (`psql -U
#: jdoe`, `mysql -ujdoe`, `docker login -u jdoe`, `curl -u jdoe:…`, `wget --user=jdoe`)
LOGIN_OPTION = (
    r"\b(?:psql|pg_dump(?:all)?|pg_restore|createdb|dropdb|mysql(?:dump)?|mariadb|mongo(?:sh|dump|restore)?|curl|"
    r"wget|(?:docker|podman|buildah|skopeo|nerdctl|oras|helm[ \t]+registry)[ \t]+login)\b[^\n|;&]{0,200}?"
    r"[ \t](?:-[uU][ \t]*|--(?:http-|ftp-|proxy-)?user(?:name)?(?:[ \t]+|=))"
)
#: a command that runs as an account or lists its processes (`sudo -u jdoe`, `crontab -u jdoe -l`,
#: `pkill -u jdoe`), up to the account (its recognizer's pattern reads a command: not `self.passwd`)
RUN_AS_OPTION = (
    r"\b(?:sudo|runuser|crontab|ps|pgrep|pkill|killall|top|htop)[ \t]+(?:[^\n|;&]{0,80}?[ \t])?"
    r"(?:-u[ \t]*|--user(?:[ \t]+|=))"
)
#: a switch to an account, up to it: `su - jdoe`, `sudo su jdoe`, a prompt's `$ su jdoe` (prose's
#: Spanish "su" has no `-` after it and starts no command)
SWITCH_USER = (
    r"(?:\bsu[ \t]+(?:-l?|--login)[ \t]+|\bsudo[ \t]+su[ \t]+(?:-[ \t]+)?|(?:^|\n)[ \t]*[$#%][ \t]*su[ \t]+)"
)
#: where a transcript's or a script's command starts: after a prompt, Dockerfile's `RUN`, `sudo` or `&&`
#: (a line of prose may start with a command's name: "adduser gives you more configuration and…")
COMMAND_START = r"(?:(?:^|\n)[ \t]*(?:[$#%]|RUN)[ \t]+|\bsudo[ \t]+|&&[ \t]*)"
#: a command that makes, changes or removes an account, named last on its line (`sudo useradd -m jdoe`,
#: `$ passwd jdoe`, `RUN usermod -aG docker jdoe`)
ACCOUNT_COMMAND = (
    rf"{COMMAND_START}(?:useradd|adduser|usermod|userdel|deluser|passwd|chsh|chfn)[ \t]+"
    r"(?:[^\n|;&=(),\"']{0,200}?[ \t])?"
)
#: a file given to an account, up to it (`chown -R jdoe:staff src`; without a group, as a command)
CHOWN = r"\bchown[ \t]+(?:-[A-Za-z]+[ \t]+)*"
#: an account at a host where SSH writes one: before an address (`jdoe@10.0.0.5: Permission denied`)
#: or a password's prompt (`jdoe@build's password:`)
AT_HOST = r"@(?:\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|[\w.-]+'s[ \t]+password:)"
#: a database connection's account: a libpq connection string's `user=` among its other keywords
#: (`host=db port=5432 user=jdoe dbname=app`), after one of them (`CONNINFO_USER`) or before
#: (`CONNINFO_KEY` after the value), and a database URL's query (`jdbc:postgresql://db/app?user=jdoe`)
CONNINFO_KEY = r"(?:host|hostaddr|port|dbname|password|passfile|sslmode|connect_timeout|application_name)="
CONNINFO_USER = rf"\b{CONNINFO_KEY}[^\s,]*[ \t]+(?:\w+=[^\s,]*[ \t]+)*user='?"
#: what follows a libpq `user=`'s value that the string's other keywords come after
CONNINFO_KEYS_AFTER = rf"'?[ \t]+(?:\w+=[^\s,]*[ \t]+)*{CONNINFO_KEY}"
DB_URL_USER = (
    r"(?i:\bjdbc:[a-z0-9]+:(?://)?|\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|sqlserver)://)"
    r"[^\s\"'?]*\?(?:[^\s\"'&#]*&)*(?i:user(?:name)?)="
)
#: a URL's account (`postgres://jdoe:…@db`, `ssh://jdoe@buildbox/`): its scheme up to the account, and
#: after the account its password (redacted by then, or too weak for a credential rule) and the `@`
URL_ACCOUNT = r"(?i:\b[a-z][a-z0-9+.-]{1,30})://"
#: a Windows domain before a URL's account, an organisation's and no one's: SMB's `smb://CORP;jdoe@`,
#: and a connection URL's `CORP\jdoe` (percent-encoded, `CORP%5Cjdoe`, as the finder reads it unescaped)
URL_DOMAIN = r"(?:[A-Za-z][\w.-]{0,62}[;\\])?"
URL_PASSWORD_AT = r"(?::(?:<REDACTED:[\w.-]{1,64}>|[^\s@/?#\[\]\"'<>]+))?@"
#: an ODBC or ADO.NET connection string's account (`Server=db;Database=app;User ID=jdoe;Password=…;`,
#: `Driver={…};UID=jdoe;PWD=…`, Npgsql's `Host=db;Username=jdoe;…`): its key among the string's other
#: `key=value;` pairs, written without spaces around `=` as code seldom is
CONNECTION_KEY = r"(?i:server|data[ ]source|host|database|initial[ ]catalog|driver|dsn|password|pwd)="
CONNECTION_USER_KEY = r"(?i:user[ ]?id|uid|user[ ]?name|user)="
CONNECTION_PAIRS = r"(?:[ \t]*[\w ]+=[^;\n]*;)*[ \t]*"
#: the account's key after another of the string's keys, up to its value; the string's pairs after a
#: value, up to another of its keys
CONNECTION_USER_AFTER_KEY = rf"\b{CONNECTION_KEY}[^;\n]*;{CONNECTION_PAIRS}{CONNECTION_USER_KEY}"
CONNECTION_KEY_AFTER = rf"{CONNECTION_PAIRS}{CONNECTION_KEY}"
#: a home folder written as a template or variable (`$USER`, `%USERNAME%`, `<you>`, `{user}`, `*`), or a
#: numbered stand-in (`user1`)
PLACEHOLDER_USER = re.compile(r"[$%<>{}*]|^\.\.?$|^x+$|^(?:user|test|guest|admin)[-_]?\d+$", re.IGNORECASE)
#: a service account by the prefix directories give one (`svc-backup`, `SRVC_JENKINS`, `srv_build`), or a
#: role's account or scheme named for the kind of user it is (`app_user`, `posix_user`)
SERVICE_USER = re.compile(r"^(?:svc|srv|srvc)[-_.]|_user$", re.IGNORECASE)

#: what introduces a name (`my name is Dana`); `INTRO_TWO` introduces many other things too ("this is
#: Python's", "I am Happy"), so a name after it needs two words
INTRO = (
    r"(?i:my\s+name\s+is|my\s+name's|name's|call\s+me|under\s+the\s+name(?:\s+of)?|"
    r"\b(?:first|last|family|middle|given|maiden)\s+name\s+is|\bsurname\s+is|"
    r"me\s+llamo|mi\s+nombre\s+es|mi\s+chiamo|il\s+mio\s+nome\s+è|ich\s+heiße|mein\s+name\s+ist|"
    r"nazywam\s+się|mijn\s+naam\s+is|jag\s+heter|je\s+m'appelle|mon\s+nom\s+est|meu\s+nome\s+é)"
)
INTRO_TWO = r"(?i:this\s+is|i\s+am|i'm|i’m|ich\s+bin|je\s+suis|sono|eu\s+sou|soy)"
GREETING = (
    r"(?i:dear|hi|hello|hey|good\s+(?:morning|afternoon|evening)|liebe[r]?|hallo|bonjour|cher|chère|"
    r"hola|estimad[oa]|ciao|caro|cara|gentile|witaj|drog[ia]|beste|olá|hej)"
)
#: a person named by how the writer knows them (`my wife Sarah`, `my manager, Tom Baker`), up to the name
RELATION = (
    r"\b(?i:my|our|your|his|her|their)[ \t]+(?i:wife|husband|partner|son|daughter|mother|father|mom|mum|"
    r"dad|brother|sister|boss|manager|colleague|co-?worker|friend|girlfriend|boyfriend|fianc[ée]e?|"
    r"grandmother|grandfather|grandma|grandpa|aunt|uncle|cousin|nephew|niece|neighbou?r|doctor|dentist|"
    r"lawyer|landlord|landlady|roommate|flatmate|teacher)[ \t]*,?[ \t]+"
)
#: a person's role before their name (`patient Emily Carter`, `candidate Sofia Lindqvist`): roles no
#: product, team or document is named after
ROLE = r"\b(?i:candidate|patient|applicant|tenant|passenger|employee)"
#: what follows a name after its role in a sentence (`candidate Sofia Lindqvist, 29`, `patient Emily
#: Carter was`), where a heading's words go on capitalised or end the line (`employee Handbook Update`)
AFTER_ROLE = r"(?=[ \t]*[,;:()]|\.(?:\s|$)|[ \t]+\p{Ll})"
#: a mail's signature delimiter (`-- ` on a line of its own), then the line its sender's name is on
SIGNATURE = r"(?:^|\n)--[ \t]?\n[ \t]*"
#: a title before a family name (`Frau Müller`, `Mr. Smith`): capitalised, as written before a name
HONORIFIC = (
    r"\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Herr|Frau|Mme|Mlle|Monsieur|Madame|Sr|Sra|Srta|Señor|Señora|"
    r"Sig|Sig\.ra|Signor|Signora|Dott|Pan|Pani|Dhr|Mevr|Sr\.a)\.?"
)
CLOSING = (
    r"(?i:regards|best\s+regards|kind\s+regards|warm\s+regards|best|many\s+thanks|thanks|thank\s+you|"
    r"cheers|sincerely|yours(?:\s+(?:truly|sincerely))?|mit\s+freundlichen\s+grüßen|viele\s+grüße|"
    r"cordialement|bien\s+à\s+vous|saludos|atentamente|cordiali\s+saluti|distinti\s+saluti|pozdrawiam|"
    r"z\s+poważaniem|met\s+vriendelijke\s+groet|groeten|atenciosamente|abraços|"
    r"med\s+vänliga\s+hälsningar|hälsningar)"
)
FIELD = (
    # (Slack's `real_name`, Discord's `global_name`, a form's `nickname`)
    r"(?i:(?:full|first|last|given|family|sur|middle|maiden|real|legal|preferred|global|nick|customer|"
    r"contact|client|patient|holder|recipient|sender|guest)[_ ]?name(?:[_ ]normalized)?|"
    r"card[_ ]?holder|account[_ ]?holder|passenger|recipient|customer|client|contact|patient|guest|"
    r"(?:ticket|policy|licen[cs]e|passport)[_ ]?holder|"
    r"employee|applicant|member|attendee|signed|from|to|cc|attn|nombre|nom|nome|imię|nazwisko|naam|prénom|"
    r"prenom|vorname|nachname|familienname|apellidos?|cognome|sobrenome|förnamn|efternamn|voornaam|"
    r"achternaam)"
)
#: a field naming the person in a role by name or by account: git's and a tracker's people (`git log`'s
#: `Author:`, a commit's trailers, `"assignee"`, `created_by`)
ACCOUNT_ROLE = (
    r"(?i:author|committer|maintainer|assignee|reporter|requester|requestor|reviewers?|"
    r"(?:signed[-_ ]off|co[-_ ]authored|reviewed|reported|tested|acked|suggested|helped|submitted|"
    r"created|requested|approved|updated|modified|closed|merged|assigned|triggered|uploaded|invited)[-_ ]by)"
)
#: a field naming the person in a role: those above, and a calendar's, a message's, a trip's, whose
#: value is a person's name in words but as often an organisation's or a service's account (AWS's
#: `"Owner": "amazon"`, a pager's `"Sender": "cli"`)
PERSON_ROLE = (
    rf"(?:{ACCOUNT_ROLE}|(?i:owner|organi[sz]er|attendees?|participants?|sender|traveler|traveller|"
    r"beneficiary))"
)
#: a field that names a tool, a product, a company or a person: `name`, and a person in a role; a
#: person's has two words or more (`"author": "Google"` is a company)
NAME_FIELD = rf"(?:(?i:name|display[-_ ]?name)|{PERSON_ROLE})"
#: a JSON field holding the account of a person in a role, or of the user an event or a record is for
#: (GitHub's events' `"actor": "jdoe"`, an audit log's `"user": "jdoe"`); as a line's field, `user` is a
#: chat transcript's speaker (`User: hi`), so only `ACCOUNT_ROLE`'s are read there
ROLE_ACCOUNT_KEY = rf"(?:{ACCOUNT_ROLE}|(?i:user|actor))"
#: an account's name as a field in a role gives one: a handle holding a lower-case letter, starting with
#: one (`jdoe`, `octocat`) or holding a digit or a separator (`JaneDoe42`, `Jane.Doe`); not a capitalised
#: word (`"author": "Google"`), nor capitals (`CUSTOM_LAMBDA`) or an account's number (`29884EXAMPLE`)
ROLE_HANDLE = r"(?=[\w.-]*[a-z])(?:[a-z_][\w.-]{0,38}|[A-Z][A-Za-z]{0,37}[0-9_.-][\w.-]{0,37})"
#: a field that only ever holds a person's name, written in capitals as a card, a ticket or a chart
#: prints it (`Cardholder: JANE A DOE`, `Patient: DOE, JANE`)
CAPITALS_FIELD = (
    r"(?i:card[-_ ]?holder|name[-_ ]on[-_ ]card|passenger(?:[-_ ]name)?|patient(?:[-_ ]name)?|"
    r"guest[-_ ]name|account[-_ ]holder|full[-_ ]name|traveler|traveller|beneficiary)"
)
#: a name in capitals: two or three words (an initial between), family name and given name after a
#: comma, or an airline's `SMITH/JOHN MR`
CAPITALS_NAME = (
    r"\p{Lu}{2,}(?:[ \t]+\p{Lu}\.?)?[ \t]+\p{Lu}{2,}|\p{Lu}{2,},[ \t]*\p{Lu}{2,}|"
    r"\p{Lu}{2,}/\p{Lu}{2,}(?:[ \t]+(?:MR|MRS|MS|MISS|MSTR|DR))?"
)
#: a title in capitals, as a booking's confirmation writes a passenger or a guest (`MR JOHN SMITH`;
#: not `MS`, which is also Microsoft's `MS SQL SERVER`)
CAPITALS_HONORIFIC = r"\b(?:MR|MRS|MISS|MSTR)\.?"
#: a form's box for a person's name, as a browser agent names the box it types into (`{"element": "First
#: name textbox", "ref": "e12", "text": "Jane"}`, Playwright's `page.fill("#firstName", "Jane")`)
NAME_BOX = r"(?i:(?:first|last|given|family|full|middle|sur|maiden)[ _-]?name)"
#: from a box's label to the value typed into it by a browser tool's call: the rest of the label, then
#: its object's `text` or `value` (`{"element": "First name", "ref": "e12", "text": "Jane"}`), up to the
#: value's opening quote
TYPED_INTO = r"[^\"'\n{}]{0,40}[\"'][^{}\n]{0,120}?[\"'](?:text|value)[\"'][ \t]*:[ \t]*[\"']"
#: a form-filling call (Playwright's, Selenium's) up to the label in its selector
FILL_CALL = (
    r"\b(?:fill|type|press_sequentially|send_keys|set_value|locator|get_by_label|getByLabel)\("
    r"[ \t]*[\"'][^\n]{0,60}?"
)
#: from the label in a call's selector to the value it fills the box with: `page.fill("#firstName",
#: "Jane")`, `fill('input[name="firstName"]', 'Jane')`, `locator("#first-name").fill("Jane")`
FILLED_WITH = (
    r"[^\"'\n]{0,40}[\"'](?:\][\"'])?(?:[ \t]*,|[ \t]*\)[ \t]*\.(?:fill|type|press_sequentially)\()"
    r"[ \t]*[\"']"
)
#: a package's people set in code or configuration (`__author__ = "…"`, `author="…"`, `authors = […]`,
#: `maintainer = …`), up to the quote their value opens with
ASSIGNED_PEOPLE = r"\b(?:__)?(?i:author|maintainer|contributor)s?(?:__)?[ \t]*=[ \t]*[\[(]?[ \t]*[\"']"
#: what `git blame` writes after a line's author: the commit's time and the line's number
#: (`3f2a1b7e (Jane Doe 2026-11-02 10:00:00 +0100 12) …`)
BLAME = r"[ \t]+\d{4}-\d\d-\d\d[ \t]+\d\d:\d\d:\d\d[ \t]+[+-]\d{4}[ \t]+\d+\)"
#: the name a coding agent sets for git's commits, up to where it begins (`git config user.name "…"`,
#: `git -c user.name=…`, `GIT_AUTHOR_NAME="…"`)
GIT_IDENTITY = r"(?:\buser\.name|\bGIT_(?:AUTHOR|COMMITTER)_NAME)[ \t]*[= \t][ \t]*[\"']?"
#: a `.gitconfig`'s `[user]` section up to its `name = …` (the finder's gate looks for the header alone)
GITCONFIG_USER = r"\[user\](?:[ \t]*\n[ \t]*\w+[ \t]*=[^\n]*){0,4}[ \t]*\n[ \t]*name[ \t]*=[ \t]*[\"']?"

STREET_WORDS_EN = (
    "Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Square|Sq|Terrace|"
    "Way|Parkway|Pkwy|Highway|Hwy|Circle|Cir|Crescent|Close|Grove|Gardens|Row|Walk|Trail|Alley|Mews|"
    "Plaza|Park|Ridge|Route|Pike|Loop|Heights|Hollow|Junction|Landing|Meadows|Mill|Mission|Port|Ports|"
    "Point|Pines|Springs|Station|Summit|Stravenue|Turnpike|Valley|Views|Village|Ville|Vista|Wells|Crossing"
)
STREET_WORDS_OTHER = (
    "rue|avenue|boulevard|bd|allée|chemin|impasse|place|quai|route|cours|via|viale|piazza|piazzale|"
    "corso|largo|vicolo|contrada|borgo|strada|calle|avenida|av|paseo|plaza|pasaje|camino|ronda|"
    "carrer|rambla|travesía|rua|travessa|alameda|praça|estrada|ul|ulica|al|aleja|osiedle|plac|pl|"
    "vägen|gatan"
)
HOUSE = r"\d{1,5}[ \t]?[a-zA-Z]?(?:[-/]\d{1,4})?"
#: a word of a street's name: capitalised, or one of the small words inside one ("de la", "of the")
STREET_NAME_WORD = r"(?:\p{Lu}[\p{L}'’.-]*|de|del|la|las|los|le|les|di|da|do|dos|das|du|des|of|the|y|e)"


GERMANIC_STREETS = (
    r"straße|strasse|str\.|weg|gasse|platz|allee|damm|ring|ufer|chaussee|straat|laan|gracht|plein|singel|"
    r"kade|dijk|vägen|gatan|gränd|torget"
)
ADDRESS_CUE = (
    r"(?i:\bi\s+live\s+at|\blive\s+at|\baddress(?:\s+is)?\s*[:=]?|\bship(?:ping)?\s+to|\bdeliver\s+to|"
    r"\breside\s+at|\bmail\s+it\s+to|\bwohne\s+in|\bj'habite\s+au|\bvivo\s+en|\babito\s+in)"
)


#: what every address form below needs (`finder`'s gate): a street word beside a capitalised word or
#: a house number, or a cue before a number
ADDRESS_GATE = (
    rf"\d[ \t]?[a-zA-Z]?[ \t]+(?:\p{{Lu}}[\p{{L}}'’.-]*[ \t]+){{1,4}}(?:{STREET_WORDS_EN})\b|"
    rf"(?i:{GERMANIC_STREETS})[ \t]+\d|"
    rf"(?i:\b(?:{STREET_WORDS_OTHER}))\.?[ \t]+(?:\p{{Lu}}|\p{{Ll}}{{1,3}}[ \t]+\p{{Lu}})|"
    rf"{ADDRESS_CUE}[ \t]*[\"']?\d"
)

MONTH = (
    r"(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|januar|februar|märz|mai|juni|juli|"
    r"oktober|dezember|janvier|février|mars|avril|juin|juillet|août|septembre|octobre|novembre|"
    r"décembre|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|"
    r"diciembre|gennaio|febbraio|aprile|maggio|giugno|luglio|settembre|ottobre|dicembre)"
)
DATE = (
    rf"(?:\d{{4}}[./-]\d{{1,2}}[./-]\d{{1,2}}|\d{{1,2}}[./-]\d{{1,2}}[./-]\d{{2,4}}|"
    rf"\d{{1,2}}(?:st|nd|rd|th|er|º)?\.?[ \t]+(?:of[ \t]+|de[ \t]+)?{MONTH}\.?,?[ \t]+(?:de[ \t]+)?\d{{4}}|"
    rf"{MONTH}\.?[ \t]+\d{{1,2}}(?:st|nd|rd|th)?,?[ \t]+\d{{4}})"
)


BIRTH_CUE = (
    r"(?i:date[\s_-]+of[\s_-]+birth|birth[\s_-]*date|birthdate|birthday|born(?:\s+on)?|\bdob\b|d\.o\.b\.?|"
    r"geburtsdatum|geboren(?:\s+am)?|date\s+de\s+naissance|né(?:e)?\s+le|fecha\s+de\s+nacimiento|"
    r"nacid[oa]\s+el|data\s+di\s+nascita|nat[oa]\s+il|data\s+urodzenia|urodzon[ya]|"
    r"geboortedatum|data\s+de\s+nascimento|födelsedatum|födelsedag)"
)

#: what people call a value when they give it (`my IBAN is …`, `"phone": "…"`, `Card: …`), by kind; the
#: value's shape follows (`LABELLED_VALUES`)
_JOIN = r"[\s_-]*"
LABELS = {
    # (`msisdn` and WhatsApp's `wa_id`: what messaging APIs call a user's number)
    "PHONE_NUMBER": r"phone|telephone|tel|mobile|cell(?:phone)?|whatsapp|wa_id|msisdn|fax|telefon|téléphone|"
    r"teléfono|telefone|telefono|telefoon|numer[\s_-]+telefonu|handy|portable|móvil|celular|cellulare",
    "CREDIT_CARD": rf"(?:credit|debit){_JOIN}card|card|cc|visa|mastercard|amex|kreditkarte|karte|carte|"
    r"tarjeta|carta|cartão|kaart|karta|kort",
    "IBAN_CODE": r"iban|bank[\s_-]*account|account[\s_-]*number|konto(?:nummer)?|compte|cuenta|conto|conta|"
    r"rekening",
    # a number an organisation files a person under (HIPAA's identifiers besides the national ones): a
    # patient's medical record, a health plan member's, an insurance policy's, an employee's, a student's
    "RECORD_NUMBER": r"mrn|medical[\s_-]+record|"
    r"(?:patient|member|subscriber|beneficiary|insurance|health[\s_-]+plan|employee|student|staff)[\s_-]+id|"
    r"(?:policy|member|employee|student|staff|patient)[\s_-]*(?:number|no\.?|nr\.?|#)",
    "NATIONAL_ID": r"ssn|social[\s_-]+security(?:[\s_-]+number)?|national[\s_-]+(?:id|insurance)"
    r"(?:[\s_-]+number)?|id[\s_-]+(?:number|card)|identity[\s_-]+(?:number|card)|personal[\s_-]+id|tax[\s_-]+id|dni|nie|nif|"
    r"pesel|personnummer|aadhaar|aadhar|pan|codice[\s_-]+fiscale|nino|tfn|sin|bsn|cpf|steuer[\s_-]*id|"
    r"driv(?:er'?s|ing)[\s_-]+licen[cs]e|"
    r"steueridentifikationsnummer|nir|hetu|henkilötunnus|personalausweis",
    "STREET_ADDRESS": r"(?:home|street|postal|mailing|shipping|billing|delivery)?[\s_-]*address|adresse|"
    r"dirección|direccion|indirizzo|endereço|adres|anschrift",
}
#: between a label and its value: an optional `number`/`no.`, quotes, then `is`, `:`, `=` or `to`
#: (an address's label must be followed by `:`, `is` or `to`: `address = self…` is code)
ADDRESS_JOIN = r"[\"']?[ \t]*(?::|\bis\b|\bto\b|\bist\b|\best\b|\bes\b|\bè\b|\bé\b)[ \t]*[\"']?"
LABEL_JOIN = (
    r"(?:[\s_-]+(?:number|no\.?|nr\.?|#|nummer|numéro|número|numero|numer))?[\"']?[ \t]*"
    r"(?:[:=]|\bis\b|\bto\b|\bwas\b|\bist\b|\best\b|\bes\b|\bè\b|\bé\b)?[ \t]*[\"']?"
)
#: a number dialled with its country code and written without spaces (E.164: `+` and 8 to 15 digits), as
#: messaging platforms name users (`whatsapp:+14155550123`) and agent frameworks then name sessions
#: (`session-+14155550123-2`, `conv_+447911123456`): no id, version or count is written this way, so it
#: is a phone number wherever it is glued. Not after a letter, a digit or a `+` (`1.2.0+20261124` is a
#: build's metadata), and not followed by a digit.
DIALLED = r"(?<![A-Za-z0-9+])\+[1-9]\d{7,14}(?!\d)"
#: an id's characters: capitals and digits, five digits or more, in groups (`12 345 678 901`)
_ID_SHAPE = r"(?=(?:[A-Z .\-/]*\d){5})[A-Z0-9](?:[ .\-/]?[A-Z0-9]){5,19}"
#: each labelled kind's value: what follows the label must look like one, whatever its checksum
LABELLED_VALUES = {
    "PHONE_NUMBER": r"\+?\(?\d[\d \t().\-/]{5,20}\d(?:[ \t]*(?:x|ext\.?)[ \t]*\d{1,6})?",
    "CREDIT_CARD": r"\d(?:[ -]?\d){12,18}",
    "IBAN_CODE": r"[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){10,32}",
    "NATIONAL_ID": _ID_SHAPE,
    "RECORD_NUMBER": _ID_SHAPE,
    # words, numbers and the punctuation of an address; no code (`(`, `=`, `_`, `[`)
    # (a full stop ends it where a sentence ends: `. ` is not inside an address, but after an
    # abbreviation, `pl.`, `H.No.`, it is)
    "STREET_ADDRESS": r"[\p{L}\d#](?:[\p{L}\d \t,'’/#-]|\.(?![ \t\n])|(?<=\b\p{L}{1,3})\.){2,78}[\p{L}\d]",
}


using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'fleet-dispatch' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'fleet-dispatch'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'fleet-dispatch' {
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]')
            [CompletionResult]::new('--key-file', '--key-file', [CompletionResultType]::ParameterName, 'The fleet key file [default: ~/.claude/fleet-dispatch.key]')
            [CompletionResult]::new('--machine', '--machine', [CompletionResultType]::ParameterName, 'This machine''s name [default: the host name]')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]')
            [CompletionResult]::new('--durability', '--durability', [CompletionResultType]::ParameterName, 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments'' work) [default: full]')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout, for programs')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('keygen', 'keygen', [CompletionResultType]::ParameterValue, 'Create the fleet key file (32 random bytes as 64 hex characters, mode 600)')
            [CompletionResult]::new('enqueue', 'enqueue', [CompletionResultType]::ParameterValue, 'Sign a job and drop it into a target''s inbox; prints its id')
            [CompletionResult]::new('listen', 'listen', [CompletionResultType]::ParameterValue, 'Run this machine''s jobs: drain its inbox one job at a time')
            [CompletionResult]::new('result', 'result', [CompletionResultType]::ParameterValue, 'Show a job''s verified result')
            [CompletionResult]::new('cancel', 'cancel', [CompletionResultType]::ParameterValue, 'Ask a target to stop a job (running or still queued)')
            [CompletionResult]::new('sweep', 'sweep', [CompletionResultType]::ParameterValue, 'Remove stale cancel markers and our stale temp files (for cron)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show what is running, queued, cancelled and finished, per target')
            [CompletionResult]::new('verify-marker', 'verify-marker', [CompletionResultType]::ParameterValue, 'Explain whether a cancel marker would be accepted, and why')
            [CompletionResult]::new('demo', 'demo', [CompletionResultType]::ParameterValue, 'Run the whole lane on a temporary folder and narrate each step')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'fleet-dispatch;keygen' {
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]')
            [CompletionResult]::new('--key-file', '--key-file', [CompletionResultType]::ParameterName, 'The fleet key file [default: ~/.claude/fleet-dispatch.key]')
            [CompletionResult]::new('--machine', '--machine', [CompletionResultType]::ParameterName, 'This machine''s name [default: the host name]')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]')
            [CompletionResult]::new('--durability', '--durability', [CompletionResultType]::ParameterName, 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments'' work) [default: full]')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Replace an existing key file')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout, for programs')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'fleet-dispatch;enqueue' {
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'The machine that should run the job')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'The machine that should run the job')
            [CompletionResult]::new('--job-id', '--job-id', [CompletionResultType]::ParameterName, 'The job id [default: generated, YYYYMMDD-HHMMSS-<16 hex>]')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Working directory on the target')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, 'An environment variable for the job (repeatable)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Stop the job after this long (e.g. 30m, 2h) [default: no limit]')
            [CompletionResult]::new('--grace', '--grace', [CompletionResultType]::ParameterName, 'Time between the graceful stop and the forced kill [default: 10s]')
            [CompletionResult]::new('--priority', '--priority', [CompletionResultType]::ParameterName, 'Drain priority')
            [CompletionResult]::new('--label', '--label', [CompletionResultType]::ParameterName, 'A short description shown by status and results')
            [CompletionResult]::new('--interrupt', '--interrupt', [CompletionResultType]::ParameterName, 'Stop and steer: queue this job at high priority, then cancel JOBID')
            [CompletionResult]::new('--wait-timeout', '--wait-timeout', [CompletionResultType]::ParameterName, 'Give up waiting after this long (exit 124)')
            [CompletionResult]::new('--via', '--via', [CompletionResultType]::ParameterName, 'Send the job to the target''s `listen --http` at this URL (http://HOST:PORT); the shared folder is used only when it cannot be reached')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]')
            [CompletionResult]::new('--key-file', '--key-file', [CompletionResultType]::ParameterName, 'The fleet key file [default: ~/.claude/fleet-dispatch.key]')
            [CompletionResult]::new('--machine', '--machine', [CompletionResultType]::ParameterName, 'This machine''s name [default: the host name]')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]')
            [CompletionResult]::new('--durability', '--durability', [CompletionResultType]::ParameterName, 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments'' work) [default: full]')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Wait for the result and exit with the job''s exit code')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout, for programs')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'fleet-dispatch;listen' {
            [CompletionResult]::new('--poll-interval', '--poll-interval', [CompletionResultType]::ParameterName, 'How often to rescan the inbox and check for cancel markers [default: 2s]')
            [CompletionResult]::new('--settle', '--settle', [CompletionResultType]::ParameterName, 'How long a file that does not parse may stay unchanged before it is rejected')
            [CompletionResult]::new('--max-job-age', '--max-job-age', [CompletionResultType]::ParameterName, 'Jobs older than this are refused as stale')
            [CompletionResult]::new('--governor-file', '--governor-file', [CompletionResultType]::ParameterName, 'Governor file: first word GREEN, YELLOW (only high jobs run) or RED (none)')
            [CompletionResult]::new('--http', '--http', [CompletionResultType]::ParameterName, 'Also take jobs and cancels over HTTP on ADDR (HOST:PORT; a bare port means 127.0.0.1:PORT). Plain HTTP, no TLS [default: off]')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]')
            [CompletionResult]::new('--key-file', '--key-file', [CompletionResultType]::ParameterName, 'The fleet key file [default: ~/.claude/fleet-dispatch.key]')
            [CompletionResult]::new('--machine', '--machine', [CompletionResultType]::ParameterName, 'This machine''s name [default: the host name]')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]')
            [CompletionResult]::new('--durability', '--durability', [CompletionResultType]::ParameterName, 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments'' work) [default: full]')
            [CompletionResult]::new('--once', '--once', [CompletionResultType]::ParameterName, 'Drain the inbox once and exit')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout, for programs')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'fleet-dispatch;result' {
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'The machine that ran the job')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'The machine that ran the job')
            [CompletionResult]::new('--job-id', '--job-id', [CompletionResultType]::ParameterName, 'The job')
            [CompletionResult]::new('--wait-timeout', '--wait-timeout', [CompletionResultType]::ParameterName, 'Give up waiting after this long (exit 124)')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]')
            [CompletionResult]::new('--key-file', '--key-file', [CompletionResultType]::ParameterName, 'The fleet key file [default: ~/.claude/fleet-dispatch.key]')
            [CompletionResult]::new('--machine', '--machine', [CompletionResultType]::ParameterName, 'This machine''s name [default: the host name]')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]')
            [CompletionResult]::new('--durability', '--durability', [CompletionResultType]::ParameterName, 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments'' work) [default: full]')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Wait for the result and exit with the job''s exit code')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout, for programs')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'fleet-dispatch;cancel' {
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'The machine running the job')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'The machine running the job')
            [CompletionResult]::new('--job-id', '--job-id', [CompletionResultType]::ParameterName, 'The job to stop')
            [CompletionResult]::new('--wait-timeout', '--wait-timeout', [CompletionResultType]::ParameterName, 'Give up waiting after this long (exit 124)')
            [CompletionResult]::new('--via', '--via', [CompletionResultType]::ParameterName, 'Send the marker to the target''s `listen --http` at this URL (http://HOST:PORT); the shared folder is used only when it cannot be reached')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]')
            [CompletionResult]::new('--key-file', '--key-file', [CompletionResultType]::ParameterName, 'The fleet key file [default: ~/.claude/fleet-dispatch.key]')
            [CompletionResult]::new('--machine', '--machine', [CompletionResultType]::ParameterName, 'This machine''s name [default: the host name]')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]')
            [CompletionResult]::new('--durability', '--durability', [CompletionResultType]::ParameterName, 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments'' work) [default: full]')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Wait until the job has stopped (or finished first)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout, for programs')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'fleet-dispatch;sweep' {
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Sweep this target [default: this machine]')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'Sweep this target [default: this machine]')
            [CompletionResult]::new('--max-age', '--max-age', [CompletionResultType]::ParameterName, 'Remove markers whose file is older than this')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]')
            [CompletionResult]::new('--key-file', '--key-file', [CompletionResultType]::ParameterName, 'The fleet key file [default: ~/.claude/fleet-dispatch.key]')
            [CompletionResult]::new('--machine', '--machine', [CompletionResultType]::ParameterName, 'This machine''s name [default: the host name]')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]')
            [CompletionResult]::new('--durability', '--durability', [CompletionResultType]::ParameterName, 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments'' work) [default: full]')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Sweep every target under the root')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Say what would be removed, remove nothing')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout, for programs')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'fleet-dispatch;status' {
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Show this target [default: this machine, or every target if it has no folder]')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'Show this target [default: this machine, or every target if it has no folder]')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]')
            [CompletionResult]::new('--key-file', '--key-file', [CompletionResultType]::ParameterName, 'The fleet key file [default: ~/.claude/fleet-dispatch.key]')
            [CompletionResult]::new('--machine', '--machine', [CompletionResultType]::ParameterName, 'This machine''s name [default: the host name]')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]')
            [CompletionResult]::new('--durability', '--durability', [CompletionResultType]::ParameterName, 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments'' work) [default: full]')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Show every target under the root')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout, for programs')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'fleet-dispatch;verify-marker' {
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Check against this target [default: the folder the file sits in]')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'Check against this target [default: the folder the file sits in]')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]')
            [CompletionResult]::new('--key-file', '--key-file', [CompletionResultType]::ParameterName, 'The fleet key file [default: ~/.claude/fleet-dispatch.key]')
            [CompletionResult]::new('--machine', '--machine', [CompletionResultType]::ParameterName, 'This machine''s name [default: the host name]')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]')
            [CompletionResult]::new('--durability', '--durability', [CompletionResultType]::ParameterName, 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments'' work) [default: full]')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout, for programs')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'fleet-dispatch;demo' {
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]')
            [CompletionResult]::new('--key-file', '--key-file', [CompletionResultType]::ParameterName, 'The fleet key file [default: ~/.claude/fleet-dispatch.key]')
            [CompletionResult]::new('--machine', '--machine', [CompletionResultType]::ParameterName, 'This machine''s name [default: the host name]')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]')
            [CompletionResult]::new('--durability', '--durability', [CompletionResultType]::ParameterName, 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments'' work) [default: full]')
            [CompletionResult]::new('--keep', '--keep', [CompletionResultType]::ParameterName, 'Keep the temporary folder and print where it is')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document on stdout, for programs')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'fleet-dispatch;help' {
            [CompletionResult]::new('keygen', 'keygen', [CompletionResultType]::ParameterValue, 'Create the fleet key file (32 random bytes as 64 hex characters, mode 600)')
            [CompletionResult]::new('enqueue', 'enqueue', [CompletionResultType]::ParameterValue, 'Sign a job and drop it into a target''s inbox; prints its id')
            [CompletionResult]::new('listen', 'listen', [CompletionResultType]::ParameterValue, 'Run this machine''s jobs: drain its inbox one job at a time')
            [CompletionResult]::new('result', 'result', [CompletionResultType]::ParameterValue, 'Show a job''s verified result')
            [CompletionResult]::new('cancel', 'cancel', [CompletionResultType]::ParameterValue, 'Ask a target to stop a job (running or still queued)')
            [CompletionResult]::new('sweep', 'sweep', [CompletionResultType]::ParameterValue, 'Remove stale cancel markers and our stale temp files (for cron)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show what is running, queued, cancelled and finished, per target')
            [CompletionResult]::new('verify-marker', 'verify-marker', [CompletionResultType]::ParameterValue, 'Explain whether a cancel marker would be accepted, and why')
            [CompletionResult]::new('demo', 'demo', [CompletionResultType]::ParameterValue, 'Run the whole lane on a temporary folder and narrate each step')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'fleet-dispatch;help;keygen' {
            break
        }
        'fleet-dispatch;help;enqueue' {
            break
        }
        'fleet-dispatch;help;listen' {
            break
        }
        'fleet-dispatch;help;result' {
            break
        }
        'fleet-dispatch;help;cancel' {
            break
        }
        'fleet-dispatch;help;sweep' {
            break
        }
        'fleet-dispatch;help;status' {
            break
        }
        'fleet-dispatch;help;verify-marker' {
            break
        }
        'fleet-dispatch;help;demo' {
            break
        }
        'fleet-dispatch;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}

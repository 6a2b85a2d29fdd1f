# fish completion for gprof.
# Generated from gprof's command-line definitions by 'gprof completion fish'; do not edit.

# __gprof_pids prints the processes gprof can record: not kernel threads.
function __gprof_pids
    ps -e -o pid=,ppid= 2>/dev/null | awk '$1 != 2 && $2 != 2 { print $1 }'
end

# __gprof_backends prints the recording backends of this OS.
function __gprof_backends
    switch (uname -s)
        case Linux
            echo perf\nptrace
        case Darwin
            echo mach
        case '*'
            echo etw\nsuspend
    end
end

# __gprof_command prints the gprof command on the line, if any.
function __gprof_command
    for w in (commandline -opc)[2..-1]
        switch $w
            case '-*'
            case '*'
                echo $w
                return 0
        end
    end
    return 1
end

# __gprof_using succeeds when the command on the line is $argv[1] and, for
# record, the line has not reached the profiled command after --.
function __gprof_using
    set -l cmd (__gprof_command)
    test "$cmd" = $argv[1]; or return 1
    not contains -- -- (commandline -opc)
end

# __gprof_after_dashdash succeeds after record's --, where a command to
# profile is typed.
function __gprof_after_dashdash
    set -l cmd (__gprof_command)
    test "$cmd" = record; and contains -- -- (commandline -opc)
end

complete -c gprof -f
complete -c gprof -n 'not __gprof_command' -s h -l help -d 'show help'
complete -c gprof -n 'not __gprof_command' -s v -l version -d 'print the version'
complete -c gprof -n 'not __gprof_command' -a record -d 'sample a command or running processes and write a profile'
complete -c gprof -n 'not __gprof_command' -a report -d 'print a summary of a profile'
complete -c gprof -n 'not __gprof_command' -a view -d 'open a profile in the Firefox Profiler, with names, from a local server'
complete -c gprof -n 'not __gprof_command' -a diff -d 'compare two profiles, or two sets of repeated runs, and gate on regressions'
complete -c gprof -n 'not __gprof_command' -a convert -d 'convert a profile to the Firefox Profiler\'s processed format, or to pprof or OTLP'
complete -c gprof -n 'not __gprof_command' -a symbolicate -d 'resolve a profile\'s names again from binaries and debug files'
complete -c gprof -n 'not __gprof_command' -a push -d 'send profiles to an OpenTelemetry Collector'
complete -c gprof -n 'not __gprof_command' -a inspect -d 'print a binary\'s identity and resolve addresses in it'
complete -c gprof -n 'not __gprof_command' -a setup -d 'on macOS, sign gprof so it may attach to your own processes'
complete -c gprof -n 'not __gprof_command' -a completion -d 'print a shell completion script'
complete -c gprof -n 'not __gprof_command' -a help -d 'show the help of gprof or of one command'

complete -c gprof -n '__gprof_using record' -s p -l pid -x -a '(__gprof_pids)' -d 'attach to process PID'
complete -c gprof -n '__gprof_using record' -s a -l system-wide -d 'record every process on the machine, and those that start, each with its threads'
complete -c gprof -n '__gprof_using record' -s t -l tid -x -d 'attach to thread TID alone'
complete -c gprof -n '__gprof_using record' -s r -s F -l rate -x -d 'sample each running thread HZ times per second of CPU time'
complete -c gprof -n '__gprof_using record' -s i -l interval -x -d 'sample every DURATION of CPU time'
complete -c gprof -n '__gprof_using record' -s d -l duration -x -d 'stop after SECONDS'
complete -c gprof -n '__gprof_using record' -s o -l output -r -F -d 'write the profile to FILE'
complete -c gprof -n '__gprof_using record' -l format -x -a 'gecko processed' -d 'profile FORMAT'
complete -c gprof -n '__gprof_using record' -s k -l kernel -d 'include kernel frames when the kernel permits'
complete -c gprof -n '__gprof_using record' -l off-cpu -d 'also sample threads while they are off the CPU'
complete -c gprof -n '__gprof_using record' -l off-cpu-cap -x -d 'with --off-cpu, take at most about N wait stacks a second per thread'
complete -c gprof -n '__gprof_using record' -l no-python -d 'leave CPython\'s eval function frames as they are, rather than show the Python functions'
complete -c gprof -n '__gprof_using record' -l no-counters -d 'do not sample each process\'s memory and CPU use, nor gprof\'s own overhead, at the interval'
complete -c gprof -n '__gprof_using record' -s e -l event -x -a 'cpu-clock cycles' -d 'sampling EVENT'
complete -c gprof -n '__gprof_using record' -l call-graph -x -a 'fp dwarf' -d 'user stacks'
complete -c gprof -n '__gprof_using record' -l stack-size -x -d 'bytes of user stack copied per sample in dwarf mode'
complete -c gprof -n '__gprof_using record' -l backend -x -a '(__gprof_backends)' -d 'sampling BACKEND'
complete -c gprof -n '__gprof_using record' -l no-symbols -d 'do not resolve and store function names at the end'
complete -c gprof -n '__gprof_using record' -l symbol-dir -x -a '(__fish_complete_directories)' -d 'also look for debug files in DIR'
complete -c gprof -n '__gprof_using record' -l debuginfod -x -d 'fetch ELF debug files'
complete -c gprof -n '__gprof_using record' -l symbol-server -x -d 'fetch PDBs that are not on this machine from the symbol server at URL, in Microsoft\'s layout'
complete -c gprof -n '__gprof_using record' -l max-memory -x -d 'keep at most SIZE of profile data in memory'
complete -c gprof -n '__gprof_using record' -l keep -x -d 'keep only the last SECONDS of samples'
complete -c gprof -n '__gprof_using record' -s q -l quiet -d 'print nothing but errors on stderr'
complete -c gprof -n '__gprof_using record' -l json-output -r -F -d 'write a summary of the recording as JSON to FILE'
complete -c gprof -n '__gprof_using record' -l json -d 'the same as --json-output -'
complete -c gprof -n '__gprof_using record' -l view -d 'then open the profile in the Firefox Profiler with names, as \'gprof view\' does, until Ctrl-C'
complete -c gprof -n '__gprof_using record' -l push -x -d 'then send the profile to the OpenTelemetry Collector at URL'
complete -c gprof -n '__gprof_using record' -l service-name -x -d 'give every process the service.name NAME'
complete -c gprof -n '__gprof_using record' -l label -x -d 'add resource attribute KEY=VALUE to every process, e.g. vcs.ref.head.revision=$SHA'
complete -c gprof -n '__gprof_using record' -l header -x -d 'send HTTP header \'NAME'
complete -c gprof -n '__gprof_using record' -l ca-file -r -F -d 'check an https collector\'s certificate against the certificate authorities in PEM FILE'
complete -c gprof -n '__gprof_using record' -l no-gzip -d 'send the request uncompressed'
complete -c gprof -n '__gprof_using record' -l push-timeout -x -d 'give up on a request after DURATION, retries included'
complete -c gprof -n '__gprof_using record' -l max-request-size -x -d 'split a profile into requests of at most SIZE'
complete -c gprof -n '__gprof_using record' -s h -l help -d 'show help'
complete -c gprof -n '__gprof_using record' -a --
complete -c gprof -n __gprof_after_dashdash -x -a '(__fish_complete_subcommand --fcs-skip=(contains -i -- -- (commandline -opc)))'

complete -c gprof -n '__gprof_using report' -s n -l top -x -d 'list the top N functions'
complete -c gprof -n '__gprof_using report' -l format -x -a 'text json collapsed' -d 'output FORMAT'
complete -c gprof -n '__gprof_using report' -l by -x -d 'rank functions by MEASURE'
complete -c gprof -n '__gprof_using report' -s o -l output -r -F -d 'write the --format output to FILE instead of stdout'
complete -c gprof -n '__gprof_using report' -l json-output -r -F -d 'write the report as JSON to FILE'
complete -c gprof -n '__gprof_using report' -l json -d 'the same as --json-output -'
complete -c gprof -n '__gprof_using report' -l limit -x -d 'detail the busiest N threads and processes in the text report'
complete -c gprof -n '__gprof_using report' -l all -d 'detail every thread and process in the text report, those without samples too'
complete -c gprof -n '__gprof_using report' -l no-inline -d 'count inlined functions as the function they were compiled into, as perf report does'
complete -c gprof -n '__gprof_using report' -l tree -d 'print the call tree'
complete -c gprof -n '__gprof_using report' -l depth -x -d 'with --tree, print at most N levels below the thread roots'
complete -c gprof -n '__gprof_using report' -l min-pct -x -d 'with --tree, hide calls under PCT percent of all samples'
complete -c gprof -n '__gprof_using report' -l pid -x -a '(__gprof_pids)' -d 'only threads of process PID'
complete -c gprof -n '__gprof_using report' -l tid -x -d 'only thread TID'
complete -c gprof -n '__gprof_using report' -l thread -x -d 'only threads named NAME'
complete -c gprof -n '__gprof_using report' -l process -x -d 'only processes named NAME'
complete -c gprof -n '__gprof_using report' -l wide -d 'do not cut long lines to the terminal\'s width'
complete -c gprof -n '__gprof_using report' -l symbol-dir -x -a '(__fish_complete_directories)' -d 'also look for debug files in DIR'
complete -c gprof -n '__gprof_using report' -l debuginfod -x -d 'fetch ELF debug files'
complete -c gprof -n '__gprof_using report' -l symbol-server -x -d 'fetch PDBs that are not on this machine from the symbol server at URL, in Microsoft\'s layout'
complete -c gprof -n '__gprof_using report' -s h -l help -d 'show help'
complete -c gprof -n '__gprof_using report' -F

complete -c gprof -n '__gprof_using view' -l no-open -d 'print the URL on standard output instead of opening a browser'
complete -c gprof -n '__gprof_using view' -l address -x -d 'serve on ADDRESS'
complete -c gprof -n '__gprof_using view' -l port -x -d 'serve on PORT'
complete -c gprof -n '__gprof_using view' -l allow-remote -d 'allow an --address other machines can reach'
complete -c gprof -n '__gprof_using view' -l profiler-url -x -d 'the Firefox Profiler front-end at URL'
complete -c gprof -n '__gprof_using view' -l symbol-dir -x -a '(__fish_complete_directories)' -d 'also look for binaries'
complete -c gprof -n '__gprof_using view' -l debuginfod -x -d 'fetch ELF debug files'
complete -c gprof -n '__gprof_using view' -l symbol-server -x -d 'fetch PDBs that are not on this machine from the symbol server at URL, in Microsoft\'s layout'
complete -c gprof -n '__gprof_using view' -s h -l help -d 'show help'
complete -c gprof -n '__gprof_using view' -F

complete -c gprof -n '__gprof_using diff' -l base -r -F -d 'a base profile FILE'
complete -c gprof -n '__gprof_using diff' -l new -r -F -d 'a new profile FILE'
complete -c gprof -n '__gprof_using diff' -l fail-if -x -d 'exit 3 when RULE is broken beyond the noise'
complete -c gprof -n '__gprof_using diff' -s n -l top -x -d 'list at most N functions per list'
complete -c gprof -n '__gprof_using diff' -l json -d 'print JSON'
complete -c gprof -n '__gprof_using diff' -l view -d 'then open the first base and new profiles in the Firefox Profiler\'s comparison view, served as \'gprof view\' serves a profile'
complete -c gprof -n '__gprof_using diff' -l no-open -d 'with --view, print the URL instead of opening a browser'
complete -c gprof -n '__gprof_using diff' -l profiler-url -x -d 'with --view, the Firefox Profiler front-end at URL'
complete -c gprof -n '__gprof_using diff' -l by -x -d 'compare functions by MEASURE'
complete -c gprof -n '__gprof_using diff' -l symbol-dir -x -a '(__fish_complete_directories)' -d 'also look for debug files in DIR'
complete -c gprof -n '__gprof_using diff' -l debuginfod -x -d 'fetch ELF debug files'
complete -c gprof -n '__gprof_using diff' -l symbol-server -x -d 'fetch PDBs that are not on this machine from the symbol server at URL, in Microsoft\'s layout'
complete -c gprof -n '__gprof_using diff' -s h -l help -d 'show help'

complete -c gprof -n '__gprof_using convert' -s o -l output -r -F -d 'write to FILE'
complete -c gprof -n '__gprof_using convert' -l to -x -a 'processed gecko pprof otlp' -d 'output FORMAT'
complete -c gprof -n '__gprof_using convert' -l symbol-dir -x -a '(__fish_complete_directories)' -d 'also look for debug files in DIR'
complete -c gprof -n '__gprof_using convert' -l debuginfod -x -d 'fetch ELF debug files'
complete -c gprof -n '__gprof_using convert' -l symbol-server -x -d 'fetch PDBs that are not on this machine from the symbol server at URL, in Microsoft\'s layout'
complete -c gprof -n '__gprof_using convert' -l pid -x -a '(__gprof_pids)' -d 'keep only process PID'
complete -c gprof -n '__gprof_using convert' -l name -x -d 'keep only processes named NAME'
complete -c gprof -n '__gprof_using convert' -l service-name -x -d 'give every process the service.name NAME'
complete -c gprof -n '__gprof_using convert' -l label -x -d 'add resource attribute KEY=VALUE to every process, e.g. vcs.ref.head.revision=$SHA'
complete -c gprof -n '__gprof_using convert' -s h -l help -d 'show help'
complete -c gprof -n '__gprof_using convert' -F

complete -c gprof -n '__gprof_using symbolicate' -s o -l output -r -F -d 'write to FILE'
complete -c gprof -n '__gprof_using symbolicate' -l format -x -a 'gecko processed' -d 'output FORMAT'
complete -c gprof -n '__gprof_using symbolicate' -l symbol-dir -x -a '(__fish_complete_directories)' -d 'also look for debug files in DIR'
complete -c gprof -n '__gprof_using symbolicate' -l debuginfod -x -d 'fetch ELF debug files'
complete -c gprof -n '__gprof_using symbolicate' -l symbol-server -x -d 'fetch PDBs that are not on this machine from the symbol server at URL, in Microsoft\'s layout'
complete -c gprof -n '__gprof_using symbolicate' -s h -l help -d 'show help'
complete -c gprof -n '__gprof_using symbolicate' -F

complete -c gprof -n '__gprof_using push' -l endpoint -x -d 'the collector\'s OTLP/HTTP URL, e.g. http://localhost:4318'
complete -c gprof -n '__gprof_using push' -l service-name -x -d 'give every process the service.name NAME'
complete -c gprof -n '__gprof_using push' -l label -x -d 'add resource attribute KEY=VALUE to every process, e.g. vcs.ref.head.revision=$SHA'
complete -c gprof -n '__gprof_using push' -l header -x -d 'send HTTP header \'NAME'
complete -c gprof -n '__gprof_using push' -l ca-file -r -F -d 'check an https collector\'s certificate against the certificate authorities in PEM FILE'
complete -c gprof -n '__gprof_using push' -l no-gzip -d 'send the request uncompressed'
complete -c gprof -n '__gprof_using push' -l timeout -x -d 'give up on a request after DURATION, retries included'
complete -c gprof -n '__gprof_using push' -l max-request-size -x -d 'split a profile into requests of at most SIZE'
complete -c gprof -n '__gprof_using push' -l symbol-dir -x -a '(__fish_complete_directories)' -d 'also look for debug files in DIR'
complete -c gprof -n '__gprof_using push' -l debuginfod -x -d 'fetch ELF debug files'
complete -c gprof -n '__gprof_using push' -l symbol-server -x -d 'fetch PDBs that are not on this machine from the symbol server at URL, in Microsoft\'s layout'
complete -c gprof -n '__gprof_using push' -s q -l quiet -d 'print nothing but errors'
complete -c gprof -n '__gprof_using push' -s h -l help -d 'show help'
complete -c gprof -n '__gprof_using push' -F

complete -c gprof -n '__gprof_using inspect' -l symbol-dir -x -a '(__fish_complete_directories)' -d 'also look for debug files in DIR'
complete -c gprof -n '__gprof_using inspect' -l arch -x -d 'the slice of a fat Mach-O file to read, by NAME'
complete -c gprof -n '__gprof_using inspect' -l json -d 'print JSON'
complete -c gprof -n '__gprof_using inspect' -s h -l help -d 'show help'

complete -c gprof -n '__gprof_using setup' -s h -l help -d 'show help'

complete -c gprof -n '__gprof_using completion' -s h -l help -d 'show help'
complete -c gprof -n '__gprof_using completion' -a 'bash fish zsh'

complete -c gprof -n '__gprof_using help' -a 'record report view diff convert symbolicate push inspect setup completion help'


Register-ArgumentCompleter -Native -CommandName fleet-dispatch -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $prev = $env:FLEET_DISPATCH_COMPLETE;
    $env:FLEET_DISPATCH_COMPLETE = "powershell";

    $args = $commandAst.Extent.Text
    $args = $args.Substring(0, [math]::Min($cursorPosition, $args.Length));
    if ($wordToComplete -eq "") {
        $args += " ''";
    }

    $results = Invoke-Expression @"
& fleet-dispatch -- $args
"@;
    if ($null -eq $prev) {
        Remove-Item Env:\FLEET_DISPATCH_COMPLETE;
    } else {
        $env:FLEET_DISPATCH_COMPLETE = $prev;
    }
    $results | ForEach-Object {
        $split = $_.Split("`t");
        $cmd = $split[0];

        if ($split.Length -eq 2) {
            $help = $split[1];
        }
        else {
            $help = $split[0];
        }

        [System.Management.Automation.CompletionResult]::new($cmd, $cmd, 'ParameterValue', $help)
    }
};
        

package dev.waterline.spark;

import java.io.IOException;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.JobStatus;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter;

/**
 * The output committer of waterline's held appends: each task attempt writes its files
 * straight into its own folder under the output folder, and a task's commit is one empty
 * marker file in that folder. Nothing is renamed.
 *
 * <p>Hadoop's {@code FileOutputCommitter} makes a job's files appear in the output folder
 * by renaming them out of {@code _temporary}: on S3 each rename is a copy and a delete,
 * and the folder bookkeeping around it makes a 100k-row write about 45 requests more than
 * a Delta append (59 against 14 for this committer, 0.53 s against 0.32 s on s3proxy).
 * waterline needs no rename: the files are invisible until its own Delta commit names them,
 * and that commit takes only the files of attempt folders holding the marker
 * ({@code waterline.engine.log.parquet_files.data_files}), so a failed or duplicate
 * attempt's files are never published. Spark's output commit coordinator still lets one
 * attempt per task commit ({@link #needsTaskCommit} is true).
 *
 * <p>Spark takes it as {@code spark.sql.parquet.output.committer.class}, a write option; it
 * extends {@code FileOutputCommitter} because that is how Spark hands a committer its output
 * path, and overrides every step that would touch storage.
 */
public class AttemptFolderCommitter extends FileOutputCommitter {
    /** The name of the marker a task's commit writes into its attempt's folder. */
    public static final String MARKER = "task-committed";

    private final Path attemptFolder;

    public AttemptFolderCommitter(Path outputPath, TaskAttemptContext context) throws IOException {
        super(outputPath, context);
        // Attempt ids are unique per attempt (retries and speculative copies included), and
        // their text starts with "attempt_", which the commit's listing relies on.
        this.attemptFolder = new Path(getOutputPath(), context.getTaskAttemptID().toString());
    }

    /** Where Spark writes this attempt's files. */
    @Override
    public Path getWorkPath() {
        return attemptFolder;
    }

    @Override
    public void setupJob(JobContext context) {
        // nothing to prepare: object stores have no folders, and local file systems create parents
    }

    @Override
    public void commitJob(JobContext context) {
        // waterline's Delta commit publishes the job's files
    }

    @Override
    public void abortJob(JobContext context, JobStatus.State state) {
        // waterline deletes the whole staging folder of a write it does not commit
    }

    @Override
    public void setupTask(TaskAttemptContext context) {
    }

    @Override
    public boolean needsTaskCommit(TaskAttemptContext context) {
        return true;
    }

    @Override
    public void commitTask(TaskAttemptContext context) throws IOException {
        FileSystem fs = attemptFolder.getFileSystem(context.getConfiguration());
        fs.create(new Path(attemptFolder, MARKER), true).close();
    }

    @Override
    public void abortTask(TaskAttemptContext context) throws IOException {
        // best effort: without the marker the files are never committed anyway
        attemptFolder.getFileSystem(context.getConfiguration()).delete(attemptFolder, true);
    }
}
